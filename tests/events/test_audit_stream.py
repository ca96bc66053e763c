"""The audit stream: every event, in order, beyond what the run keeps; artifacts and details."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from temporalio.client import Client

from durable_tools import (
    AgentConfig,
    ContentBlock,
    DurableTools,
    Identity,
    RunStatus,
    ToolContext,
    ToolRegistry,
    ToolResult,
)
from durable_tools.events import MISSED_EVENT, JsonLinesSink
from durable_tools.tools import FileSystemArtifactStore
from support import answer, assert_not_wedged, calls, running_worker, write_script

STEPS = 6


def read_lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_follower_receives_every_event_beyond_the_runs_cap(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    sink_path = tmp_path / "events.jsonl"
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    async def step(n: int, ctx: ToolContext) -> str:
        """Waits until the follower has read this call's start, so it keeps up."""
        while not any(e.get("call_id") == ctx.tool_call_id for e in read_lines(sink_path)):
            await asyncio.sleep(0.05)
        return f"step {n}"

    model = write_script(
        tmp_path,
        [*(calls((f"s{n}", "step", {"n": n})) for n in range(STEPS)), answer("done")],
    )
    config = AgentConfig(model=model, events_kept=5)
    identity = Identity(tenant="acme", user="ana")
    sink = JsonLinesSink(sink_path)
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("go", config=config, identity=identity)
        followed = await asyncio.wait_for(run.follow_events(sink, interval=0.05), 60)
        kept = await run.events()
        late = await run.events_since(0)
        await assert_not_wedged(run.handle)
    sink.close()

    lines = read_lines(sink_path)
    names = [line["event"] for line in lines]
    expected = ["run.started"]
    for _ in range(STEPS):
        expected += ["tool.started", "tool.completed"]
    assert names == [*expected, "run.completed"]
    assert [line["seq"] for line in lines] == list(range(len(lines)))  # in order, none missing
    assert followed.delivered == len(lines) and followed.missed == 0
    assert len(kept) == 5 and late.total == len(lines)  # the run itself kept only 5
    assert all(line["identity"] == {"tenant": "acme", "user": "ana"} for line in lines)
    done = [line for line in lines if line["event"] == "tool.completed"]
    assert all(d["transport"] == "function" and d["attempt"] == 1 for d in done)
    assert all(d["duration_ms"] >= 0 for d in done)
    # A follower that starts after the events were dropped is told how many it missed.
    assert late.missed == len(lines) - 5 and [e.seq for e in late.events] == list(
        range(len(lines) - 5, len(lines))
    )


async def test_late_follower_gets_a_missed_marker_then_the_kept_events(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    def ping(n: int) -> str:
        """Answers at once."""
        return "pong"

    model = write_script(
        tmp_path, [*(calls((f"p{n}", "ping", {"n": n})) for n in range(4)), answer("ok")]
    )
    path = tmp_path / "late.jsonl"
    sink = JsonLinesSink(path)
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start(
            "go", config=AgentConfig(model=model, events_kept=3)
        )
        await run.result()
        followed = await run.follow_events(sink)
    sink.close()
    lines = read_lines(path)
    assert lines[0]["event"] == MISSED_EVENT
    assert followed.missed == 10 - 3  # 1 start + 4 x 2 tool events + 1 end = 10
    assert [line["event"] for line in lines[1:]] == [
        "tool.started",
        "tool.completed",
        "run.completed",
    ]


async def test_timeline_and_events_carry_artifacts_and_details(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    registry = ToolRegistry()
    store = FileSystemArtifactStore(tmp_path / "artifacts")

    @registry.tool(read_only=True)
    def dump(size: int) -> str:
        """A large output."""
        return "x" * size

    @registry.tool(read_only=True)
    def stats(table: str) -> ToolResult:
        """A short text for the model and a structured value for applications."""
        return ToolResult(
            content=[ContentBlock(type="text", text="3 rows")],
            structured={"table": table, "rows": 3, "columns": ["a", "b"]},
        )

    model = write_script(
        tmp_path,
        [calls(("d", "dump", {"size": 50_000}), ("s", "stats", {"table": "t"})), answer("ok")],
    )
    async with running_worker(client, registry, task_queue, artifact_store=store):
        run = await DurableTools(client, task_queue).start("go", model=model)
        result = await run.result()
        timeline = {r.call_id: r for r in await run.timeline()}
        events = await run.events()
        conversation = await run.conversation()
    assert result.status == RunStatus.COMPLETED
    [ref] = timeline["d"].artifacts
    assert store.get(ref) == b"x" * 50_000
    assert timeline["s"].details == {"table": "t", "rows": 3, "columns": ["a", "b"]}
    completed = {e.call_id: e for e in events if e.event == "tool.completed"}
    assert completed["d"].artifacts == [ref]
    assert completed["s"].details == timeline["s"].details
    replies = {m.tool_call_id: m.content for m in conversation if m.role == "tool"}
    assert replies["s"] == "3 rows"  # the details never reach the model
    assert "columns" not in json.dumps([m.model_dump(mode="json") for m in conversation])
