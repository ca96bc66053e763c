"""`durable-tools run --code-mode` and `--compaction` against a real dev server and worker,
and the strict parsing of their `KEY=VALUE` settings."""

from __future__ import annotations

import argparse
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, ScheduleActionStartWorkflow

import cli_support
from cli_support import cli, run_exists, start_input, usage_error
from durable_tools import CodeMode, CompactionConfig, ToolRegistry
from durable_tools.cli import build_parser
from durable_tools.workflows import AgentInput
from support import answer, calls, running_worker, write_script

cli_env = cli_support.cli_env  # the fixture, by the name the tests ask for

SCRIPT = """
totals = [await balance(account=f"acc-{k}") for k in range(1, 4)]
sum(totals)
"""


def bank_registry() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    def balance(account: str) -> int:
        """An account's balance in cents."""
        return 100 * int(account.removeprefix("acc-"))

    return registry


async def test_run_code_mode_runs_the_models_script_over_the_tools(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    cli_env: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    model = write_script(
        tmp_path,
        [calls(("s1", "run_script", {"script": SCRIPT})), answer("They hold 6.00 together.")],
    )
    run_id = f"code-{uuid.uuid4().hex[:8]}"
    async with running_worker(client, bank_registry(), task_queue):
        code, out, err = await cli(
            capsys,
            *("run", "What do acc-1 to acc-3 hold?", "--model", model, "--id", run_id),
            *("--code-mode", "max_host_calls=5", "--wait", "--json"),
        )
    assert code == 0, err
    outcome = json.loads(out)
    assert outcome["status"] == "completed" and outcome["final_answer"].startswith("They hold")
    calls_made = [(r["call_id"], r["tool"], r["status"]) for r in outcome["timeline"]]
    assert calls_made == [
        ("s1", "run_script", "completed"),
        ("s1/1", "balance", "completed"),
        ("s1/2", "balance", "completed"),
        ("s1/3", "balance", "completed"),
    ]
    started = await start_input(client, run_id)
    assert started.config.code_mode == CodeMode(max_host_calls=5)


async def test_run_without_code_mode_offers_no_script_tool(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    cli_env: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    model = write_script(tmp_path, [calls(("s1", "run_script", {"script": SCRIPT})), answer("?")])
    async with running_worker(client, bank_registry(), task_queue):
        code, out, err = await cli(capsys, "run", "sum them", "--model", model, "--wait", "--json")
    assert code == 0, err
    [record] = json.loads(out)["timeline"]
    assert record["tool"] == "run_script" and record["status"] != "completed", record


async def test_run_compaction_reaches_the_runs_config(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    cli_env: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    model = write_script(tmp_path, [answer("short and done")])
    run_id = f"compact-{uuid.uuid4().hex[:8]}"
    known = f"known-{uuid.uuid4().hex[:8]}"
    settings = "window_tokens=32000, threshold=0.7,keep_last=10,summarizer_model=" + model
    async with running_worker(client, bank_registry(), task_queue):
        code, out, err = await cli(
            capsys,
            *("run", "hi", "--model", model, "--id", run_id, "--compaction", settings, "--wait"),
        )
    # A model whose window is known needs no settings: its window is recorded at start.
    known_run = await cli(
        capsys, "run", "hi", "--model", "openai:gpt-4o", "--id", known, "--compaction"
    )
    await client.get_workflow_handle(known).terminate("only its start is read")
    assert code == 0 and "short and done" in out, err
    started = await start_input(client, run_id)
    assert started.config.compaction == CompactionConfig(
        window_tokens=32_000, threshold=0.7, keep_last=10, summarizer_model=model
    )
    assert known_run[0] == 0, known_run
    compaction = (await start_input(client, known)).config.compaction
    assert compaction == CompactionConfig(window_tokens=128_000)


async def test_bad_code_mode_and_compaction_values_start_no_run(
    client: Client, tmp_path: Path, cli_env: str, capsys: pytest.CaptureFixture[str]
) -> None:
    model = write_script(tmp_path, [answer("x")])
    run_id = f"bad-{uuid.uuid4().hex[:8]}"
    base = ("run", "hi", "--model", model, "--id", run_id)
    no_window = await cli(capsys, *base, "--compaction")
    bad_summarizer = await cli(
        capsys, *base, "--compaction", "window_tokens=4000,summarizer_model=gpt-4o"
    )
    hidden = await cli(
        capsys, *base, "--compaction", "window_tokens=4000,summarizer_model=openai:gpt\x1b[2J"
    )
    assert no_window[0] == 2 and "compaction needs window_tokens" in no_window[2], no_window
    assert no_window[2].count("\n") == 1, no_window
    assert "--compaction summarizer_model: model spec 'gpt-4o'" in bad_summarizer[2]
    assert "control characters" in hidden[2] and "\x1b" not in hidden[2], hidden
    for flag, value, expected in [
        ("--compaction", "threshold=nan", "threshold: Input should be a finite number"),
        ("--compaction", "threshold=1.5", "threshold: Input should be less than or equal to 1"),
        ("--code-mode", "max_step_seconds=inf", "max_step_seconds: Input should be a finite"),
        ("--code-mode", "max_host_calls=0", "max_host_calls: Input should be greater than"),
    ]:
        refused = await usage_error(capsys, *base, flag, value)
        assert refused[0] == 2 and f"argument {flag}: {expected}" in refused[2], refused
    assert not await run_exists(client, run_id)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "window_tokens=\uff11\uff12\uff18\uff10\uff10\uff10",
            "window_tokens: Input should be a valid integer",
        ),
        ("window_tokens=1e9", "window_tokens: Input should be a valid integer"),
        ("window_tokens=99999999999999999999999", "less than or equal to 100000000"),
        ("window_tokens=255", "greater than or equal to 256"),
        ("window_tokens=0x1000", "valid integer"),
        ("threshold=-0", "threshold: Input should be greater than 0"),
        ("threshold=1e-400", "threshold: Input should be greater than 0"),
        ("threshold=Infinity", "finite number"),
        ("keep_last=", "keep_last: Input should be a valid integer"),
        ("Window_Tokens=1000", "unknown setting 'Window_Tokens'"),
        ("window\uff3ftokens=1000", "unknown setting 'window\\uff3ftokens'"),
        ("window_tokens=1000,window_tokens=2000", "window_tokens is given twice"),
        ("=1000", "'=1000' is not KEY=VALUE"),
        ("window_tokens", "'window_tokens' is not KEY=VALUE"),
        ("window_tokens=1000,,keep_last=2", "'' is not KEY=VALUE"),
        ("What did acc-1 spend?", "a prompt goes before this flag"),
        ("keep_last=2," + "x" * 5_000, "settings too long"),
        ("summarizer_model=ab", "summarizer_model: String should have at least 3 characters"),
        ("__class__=1", "unknown setting '__class__'"),
    ],
)
def test_settings_are_parsed_strictly(text: str, expected: str) -> None:
    parse = _settings_type("--compaction")
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        parse(text)
    message = str(refused.value)
    assert expected in message, message
    assert len(message) < 400 and "\n" not in message


def test_settings_take_what_the_python_api_takes() -> None:
    compaction = _settings_type("--compaction")
    code_mode = _settings_type("--code-mode")
    assert compaction("") == CompactionConfig()
    assert compaction(" window_tokens = 1_000 , threshold=.5 ") == CompactionConfig(
        window_tokens=1000, threshold=0.5
    )
    assert code_mode("max_memory_bytes=2000000,max_sleep_seconds=0") == CodeMode(
        max_memory_bytes=2_000_000, max_sleep_seconds=0
    )
    parsed = build_parser().parse_args(["run", "hi", "--model", "m:x", "--code-mode"])
    assert parsed.code_mode == CodeMode() and parsed.compaction is None


def _settings_type(flag: str) -> Any:
    """The argparse type of `run`'s `flag` (the same object `schedule create` uses)."""
    parser = build_parser()
    run = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    [action] = [a for a in run.choices["run"]._actions if flag in a.option_strings]
    return action.type


async def test_schedule_create_takes_the_same_code_mode_and_compaction_flags(
    client: Client, cli_env: str, capsys: pytest.CaptureFixture[str]
) -> None:
    name = f"s-{uuid.uuid4().hex[:8]}"
    code, _, err = await cli(
        capsys,
        *("schedule", "create", name, "--cron", "0 0 1 1 *", "--paused", "--prompt", "p"),
        *("--model", "scripted:x.json", "--code-mode", "--compaction", "window_tokens=4000"),
    )
    assert code == 0, err
    handle = client.get_schedule_handle(name)
    try:
        action = (await handle.describe()).schedule.action
        assert isinstance(action, ScheduleActionStartWorkflow)
        [started] = await client.data_converter.decode(list(action.args), [AgentInput])
    finally:
        await handle.delete()
    assert isinstance(started, AgentInput)
    assert started.config.code_mode == CodeMode()
    assert started.config.compaction == CompactionConfig(window_tokens=4000)


@pytest.mark.parametrize("flag", ["--concurrency", "--max-turns", "--idle-timeout"])
@pytest.mark.parametrize(
    "value",
    [
        "\u0661\u0660",  # Arabic-Indic digits: Python's int() and float() read 10
        "\uff11\uff10",  # full-width digits
        "1_0",
        "9" * 5_000,  # past int()'s digit limit: a ValueError of its own
    ],
)
async def test_count_and_seconds_flags_take_ascii_digits_only(
    client: Client,
    tmp_path: Path,
    cli_env: str,
    capsys: pytest.CaptureFixture[str],
    flag: str,
    value: str,
) -> None:
    model = write_script(tmp_path, [answer("x")])
    run_id = f"digits-{uuid.uuid4().hex[:8]}"
    session = ("--session",) if flag == "--idle-timeout" else ()
    code, _, err = await usage_error(
        capsys, "run", "hi", "--model", model, "--id", run_id, *session, flag, value
    )
    [error] = [line for line in err.splitlines() if "error:" in line]
    assert code == 2 and f"argument {flag}" in error and len(error) < 400, error
    assert not await run_exists(client, run_id)
