"""`durable-tools worker --model-limit SPEC=RPM[,TPM]`: strict parsing, and limits that a
real worker process puts in force on the real dev server."""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from temporalio.client import Client

from durable_tools import DurableTools
from durable_tools.cli import build_parser
from durable_tools.worker import ModelLimits
from support import write_script

PROGRAM = Path(sys.executable).parent / "durable-tools"


def parse(*values: str) -> list[tuple[str, ModelLimits]]:
    flags = [part for value in values for part in ("--model-limit", value)]
    args = build_parser().parse_args(["worker", "--tools", "myapp.tools", *flags])
    limits: list[tuple[str, ModelLimits]] = args.model_limit
    return limits


def refused(value: str) -> str:
    """The parser's error for `--model-limit VALUE` (it must refuse it, exit code 2)."""
    errors = io.StringIO()
    with contextlib.redirect_stderr(errors), pytest.raises(SystemExit) as exited:
        parse(value)
    assert exited.value.code == 2
    return errors.getvalue()


def test_limits_parse_into_model_limits() -> None:
    assert parse("openai:gpt-4.1=500,30000", "anthropic:claude-sonnet-4-5=0.5") == [
        ("openai:gpt-4.1", ModelLimits(requests_per_minute=500, tokens_per_minute=30_000)),
        ("anthropic:claude-sonnet-4-5", ModelLimits(requests_per_minute=0.5)),
    ]
    # The spec is everything before the "=" (pydantic-ai specs hold colons).
    assert parse("pydantic-ai:openai:gpt-4o=60")[0][0] == "pydantic-ai:openai:gpt-4o"
    assert parse() == []


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("openai:gpt-4.1", "is not SPEC=RPM[,TPM]"),
        ("=500", "is not SPEC=RPM[,TPM]"),
        ("openai:gpt-4.1=", "requests a minute must be a positive number"),
        ("openai:gpt-4.1=abc", "requests a minute must be a positive number"),
        ("openai:gpt-4.1=-5", "requests a minute must be a positive number"),
        ("openai:gpt-4.1=0", "greater than 0"),
        ("openai:gpt-4.1=0.0", "greater than 0"),
        ("openai:gpt-4.1=inf", "requests a minute must be a positive number"),
        ("openai:gpt-4.1=nan", "requests a minute must be a positive number"),
        ("openai:gpt-4.1=1e9", "requests a minute must be a positive number"),
        ("openai:gpt-4.1=1_000", "requests a minute must be a positive number"),
        ("openai:gpt-4.1=\u0663", "requests a minute must be a positive number"),  # Arabic 3
        ("openai:gpt-4.1=\uff15", "requests a minute must be a positive number"),  # fullwidth 5
        ("openai:gpt-4.1= 5", "requests a minute must be a positive number"),
        ("openai:gpt-4.1=1000000001", "less than or equal to 1000000000"),
        ("openai:gpt-4.1=" + "9" * 400, "finite number"),
        ("openai:gpt-4.1=5,", "tokens a minute must be a positive whole number"),
        ("openai:gpt-4.1=5,1.5", "tokens a minute must be a positive whole number"),
        ("openai:gpt-4.1=5,0", "greater than 0"),
        ("openai:gpt-4.1=5,1000000000001", "less than or equal to 1000000000000"),
        ("openai:gpt-4.1=5,6,7", "tokens a minute must be a positive whole number"),
        ("openai:gpt-4.1=5=6", "is not SPEC=RPM[,TPM]"),
        ("x" * 10_000 + "=5", "is too long"),
    ],
)
def test_a_bad_limit_is_refused_naming_it(value: str, says: str) -> None:
    error = refused(value)
    assert says in error, error
    assert "--model-limit" in error
    assert ascii(value[:200]).strip("'") in error or "..." in error
    assert len(error.splitlines()[-1]) < 600  # one short line, whatever the value holds


def test_help_names_the_flag() -> None:
    worker_help = io.StringIO()
    with contextlib.redirect_stdout(worker_help), pytest.raises(SystemExit):
        build_parser().parse_args(["worker", "--help"])
    assert "--model-limit SPEC=RPM[,TPM]" in worker_help.getvalue()


def run_worker(client: Client, task_queue: str, *args: str) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "TEMPORAL_ADDRESS": client.service_client.config.target_host,
        "TEMPORAL_NAMESPACE": client.namespace,
        "DURABLE_TOOLS_TASK_QUEUE": task_queue,
    }
    return subprocess.Popen(
        [str(PROGRAM), "worker", "--tools", "durable_tools.demo.tools", "--graceful-shutdown",
         "1", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )  # fmt: skip


def test_a_spec_no_worker_could_resolve_is_refused(client: Client, task_queue: str) -> None:
    for value, says in [
        ("nosuch:model=5", "unknown model provider 'nosuch'"),
        ("openai: gpt-4.1=5", "model spec 'openai: gpt-4.1' is incomplete or padded"),
    ]:
        worker = run_worker(client, task_queue, "--model-limit", value)
        _, err = worker.communicate(timeout=60)
        assert worker.returncode == 2 and f"--model-limit: {says}" in err, err
    twice = run_worker(
        client, task_queue, "--model-limit", "openai:a=5", "--model-limit", "openai:a=6"
    )
    _, err = twice.communicate(timeout=60)
    assert twice.returncode == 2 and "'openai:a' is given twice" in err, err


async def test_the_worker_puts_the_limits_in_force(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    spec = write_script(tmp_path, [{"text": "hello back"}])
    worker = run_worker(client, task_queue, "--model-limit", f"{spec}=600,100000")
    try:
        assert worker.stdout is not None
        banner = []
        while not banner or not banner[-1].startswith("Ctrl-C"):
            line = await asyncio.to_thread(worker.stdout.readline)
            assert line, "".join(banner)
            banner.append(line)
        assert f"model limits: {spec} 600/min 100000 tokens/min\n" in banner
        run = await DurableTools(client, task_queue).start("hello", model=spec)
        assert (await run.result()).final_answer == "hello back"
        # The model call booked its start with the limiter: a workflow of its own on the
        # limiters' queue beside the runs' (none without limits).
        query = f'TaskQueue = "{task_queue}" OR TaskQueue = "{task_queue}.model-limiter"'
        deadline = time.monotonic() + 30
        others: list[str] = []
        while not others and time.monotonic() < deadline:
            others = [w.id async for w in client.list_workflows(query) if w.id != run.run_id]
            await asyncio.sleep(0.2)
        assert others, "no limiter booked the model call"
        assert any(spec in workflow_id for workflow_id in others), others
    finally:
        worker.terminate()
        await asyncio.to_thread(worker.communicate, timeout=30)
