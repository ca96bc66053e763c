"""Driving the `durable-tools` command line from tests, against the session's dev server.

`main()` runs in a thread (it calls `asyncio.run`), so the test's own event loop keeps
running the worker meanwhile; stdout and stderr are captured by capsys.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import WorkflowEnvironment

from durable_tools.cli import main
from durable_tools.workflows import AgentInput

CliResult = tuple[int, str, str]


@pytest.fixture
def cli_env(
    env: WorkflowEnvironment, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, task_queue: str
) -> str:
    """Point the CLI at the session server, on the test's task queue; returns the address."""
    address = env.client.service_client.config.target_host
    monkeypatch.setenv("TEMPORAL_ADDRESS", address)
    monkeypatch.setenv("TEMPORAL_NAMESPACE", env.client.namespace)
    monkeypatch.setenv("DURABLE_TOOLS_TASK_QUEUE", task_queue)
    monkeypatch.setenv("DURABLE_TOOLS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DURABLE_TOOLS_ARTIFACTS", str(tmp_path / "artifacts"))
    monkeypatch.delenv("TEMPORAL_UI_URL", raising=False)
    return address


async def cli(capsys: pytest.CaptureFixture[str], *args: str) -> CliResult:
    """Run the command line with `args`; returns (exit code, stdout, stderr)."""
    code = await asyncio.to_thread(main, list(args))
    out, err = capsys.readouterr()
    return code, out, err


async def cli_json(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    """Run a command with `--json` and return the parsed output (it must succeed)."""
    code, out, err = await cli(capsys, *args, "--json")
    assert code == 0, err
    return json.loads(out)


async def usage_error(capsys: pytest.CaptureFixture[str], *args: str) -> CliResult:
    """Run a command line argparse refuses (it exits): (its exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as exited:
        await cli(capsys, *args)
    out, err = capsys.readouterr()
    return int(str(exited.value.code)), out, err


async def run_exists(client: Client, run_id: str) -> bool:
    """Whether a workflow with this id exists (a refused command must start none)."""
    try:
        await client.get_workflow_handle(run_id).describe()
    except RPCError as error:
        assert error.status == RPCStatusCode.NOT_FOUND, error
        return False
    return True


async def start_input(client: Client, run_id: str) -> AgentInput:
    """The input a run started with, from its first history event."""
    first = (await client.get_workflow_handle(run_id).fetch_history()).events[0]
    payloads = first.workflow_execution_started_event_attributes.input.payloads
    [started] = await client.data_converter.decode(payloads, [AgentInput])
    assert isinstance(started, AgentInput)
    return started
