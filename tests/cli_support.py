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
from temporalio.testing import WorkflowEnvironment

from durable_tools.cli import main

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
