"""`durable-tools events RUN --follow --sink jsonl:PATH` against the session's dev server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from temporalio.client import Client

import cli_support
from cli_support import cli
from durable_tools import DurableTools, ToolRegistry
from support import answer, calls, running_worker, write_script

cli_env = cli_support.cli_env  # the fixture, by the name the tests ask for


async def test_events_follow_prints_and_sinks_every_event(
    cli_env: str, client: Client, task_queue: str, tmp_path: Path, capsys: Any
) -> None:
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    def ping(n: int) -> str:
        """Answers at once."""
        return "pong"

    model = write_script(tmp_path, [calls(("p1", "ping", {"n": 1})), answer("ok")])
    sink = tmp_path / "audit.jsonl"
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("go", model=model)
        code, out, err = await cli(
            capsys, "events", run.run_id, "--follow", "--sink", f"jsonl:{sink}"
        )
        bad = await cli(capsys, "events", run.run_id, "--sink", "s3:bucket")
    assert code == 0, err
    names = ["run.started", "tool.started", "tool.completed", "run.completed"]
    assert [json.loads(line)["event"] for line in sink.read_text().splitlines()] == names
    lines = out.splitlines()
    assert len(lines) == 4 and "tool.completed ping p1 [function, attempt 1" in lines[2]
    assert bad[0] == 2 and "unknown event sink 's3:bucket'" in bad[2]
