"""`durable-tools worker --metrics-port N --log-format json`, as a real process."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
from prometheus_text import scrape, value
from temporalio.testing import WorkflowEnvironment

from durable_tools import DurableTools, RunStatus
from support import answer, assert_not_wedged, calls, free_port, write_script

TOOLS = '''
import logging
from durable_tools import ToolRegistry

registry = ToolRegistry()

@registry.tool(idempotent=True)
def charge(amount_cents: int) -> str:
    """Charge a card."""
    logging.getLogger("shop").info("charging %s", amount_cents)
    return "charged"
'''


async def _wait_for_line(path: Path, text: str, process: asyncio.subprocess.Process) -> None:
    for _ in range(300):
        if text in path.read_text():
            return
        if process.returncode is not None:
            break
        await asyncio.sleep(0.1)
    raise AssertionError(f"worker never said {text!r}: {path.read_text()}")


def _json_lines(text: str) -> list[dict[str, Any]]:
    lines = []
    for line in text.splitlines():
        if line.startswith("{"):
            lines.append(json.loads(line))
    return lines


async def test_worker_serves_metrics_and_writes_json_logs(
    env: WorkflowEnvironment, task_queue: str, tmp_path: Path
) -> None:
    (tmp_path / "shop_tools.py").write_text(TOOLS)
    port = free_port()
    out, err = tmp_path / "worker.out", tmp_path / "worker.err"
    environ = {
        **os.environ,
        "PYTHONPATH": str(tmp_path),
        "TEMPORAL_ADDRESS": env.client.service_client.config.target_host,
        "TEMPORAL_NAMESPACE": env.client.namespace,
        "DURABLE_TOOLS_TASK_QUEUE": task_queue,
        "DURABLE_TOOLS_HOME": str(tmp_path / "home"),
        "DURABLE_TOOLS_ARTIFACTS": str(tmp_path / "artifacts"),
        "DURABLE_TOOLS_SECRET_SHOP_KEY": "sk-never-logged",
    }
    with out.open("w") as stdout, err.open("w") as stderr:
        worker = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "durable_tools.cli",
            "worker",
            "--tools",
            "shop_tools",
            "--metrics-port",
            str(port),
            "--log-format",
            "json",
            stdout=stdout,
            stderr=stderr,
            env=environ,
        )
    try:
        await _wait_for_line(out, "Ctrl-C", worker)
        assert f"http://127.0.0.1:{port}/metrics" in out.read_text()
        model = write_script(
            tmp_path, [calls(("c1", "charge", {"amount_cents": 500})), answer("charged")]
        )
        run = await DurableTools(env.client, task_queue).start("charge 5", model=model)
        assert (await run.result()).status == RunStatus.COMPLETED
        samples = await scrape(port)
    finally:
        if worker.returncode is None:
            worker.send_signal(signal.SIGTERM)
        await asyncio.wait_for(worker.wait(), 30)
    await assert_not_wedged(run.handle)

    assert value(samples, "durable_tools_tool_calls", tool="charge", outcome="ok") == 1
    assert value(samples, "temporal_workflow_completed", task_queue=task_queue) == 1

    logs = _json_lines(err.read_text())
    (charging,) = [line for line in logs if line["message"] == "charging 500"]
    assert charging["run_id"] == run.run_id
    assert (charging["call_id"], charging["tool"], charging["logger"]) == ("c1", "charge", "shop")
    assert charging["level"] == "INFO"
    assert "sk-never-logged" not in err.read_text()


async def test_a_taken_metrics_port_is_a_clear_error(
    env: WorkflowEnvironment, task_queue: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket

    from durable_tools.cli import main

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = await asyncio.to_thread(
            main, ["worker", "--tools", "durable_tools.demo.tools", "--metrics-port", str(port)]
        )
    assert code == 2
    assert f"cannot serve metrics on 127.0.0.1:{port}" in capsys.readouterr().err
