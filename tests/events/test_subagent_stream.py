"""A sub-agent's progress and events reach its parent's stream, marked with the
sub-agent's run id: `AgentRun.progress()`, `AgentRun.stream()`, `AgentRun.events()` and
`follow_events`."""

from __future__ import annotations

import asyncio
from pathlib import Path

from temporalio.client import Client

from durable_tools import (
    AgentConfig,
    DurableTools,
    RunStatus,
    ToolContext,
    ToolRegistry,
)
from durable_tools.streaming import StreamEvent
from durable_tools.workflows import RunEvent
from support import answer, calls, running_worker, write_script


class ListSink:
    def __init__(self) -> None:
        self.seen: list[tuple[str, RunEvent]] = []

    def emit(self, run_id: str, event: RunEvent) -> None:
        self.seen.append((run_id, event))

    def close(self) -> None:
        return None


async def test_a_sub_agents_progress_and_events_reach_the_parents_stream_marked(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    registry = ToolRegistry()
    release = asyncio.Event()

    @registry.tool(read_only=True)
    async def crawl(site: str, ctx: ToolContext) -> str:
        """Crawls, reporting progress."""
        ctx.progress("crawled page 1", fraction=0.5)
        await release.wait()
        return "crawled"

    child_model = write_script(tmp_path, [calls(("k1", "crawl", {"site": "a"})), answer("found")])
    registry.subagent(
        AgentConfig(name="researcher", model=child_model), name="researcher", description="R."
    )
    parent_model = write_script(
        tmp_path, [calls(("r1", "researcher", {"task": "look"})), answer("done")]
    )
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("go", model=parent_model)
        child_id = f"{run.run_id}.r1"
        sink = ListSink()
        following = asyncio.ensure_future(run.follow_events(sink, interval=0.1))
        streamed: list[StreamEvent] = []

        async def watch() -> None:
            async for event in run.stream():
                streamed.append(event)

        watching = asyncio.ensure_future(watch())
        progress = []
        for _ in range(200):
            progress = [p for p in await run.progress() if p.run_id == child_id]
            if progress:
                break
            await asyncio.sleep(0.1)
        [report] = progress
        assert (report.call_id, report.tool, report.progress.message) == (
            "k1",
            "crawl",
            "crawled page 1",
        )
        for _ in range(200):
            if any(e.kind == "tool_progress" and e.run_id == child_id for e in streamed):
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError(f"no progress of the sub-agent in the stream: {streamed}")
        release.set()
        result = await run.result()
        followed = await asyncio.wait_for(following, 30)
        await asyncio.wait_for(watching, 30)
        merged = await run.events()
        own = await run.events(subagents=False)
    assert result.status == RunStatus.COMPLETED
    # follow_events: the child's events, marked, under the parent's id; the parent's own.
    assert followed.subagents == [child_id]
    assert {run_id for run_id, _ in sink.seen} == {run.run_id}
    theirs = [(e.event, e.call_id) for _, e in sink.seen if e.subagent_run == child_id]
    assert ("tool.started", "k1") in theirs and ("tool.completed", "k1") in theirs
    assert ("run.completed", None) in theirs
    mine = [(e.event, e.call_id) for _, e in sink.seen if e.subagent_run is None]
    assert ("tool.started", "r1") in mine and ("run.completed", None) in mine
    assert followed.delivered == len(sink.seen)
    # events(): the same, merged in time order; without sub-agents, the run's own only.
    assert [e for e in merged if e.subagent_run is None] == own
    assert {e.subagent_run for e in merged} == {None, child_id}
    assert [e.at for e in merged] == sorted(e.at for e in merged)
    assert ("tool.completed", "k1") in [(e.event, e.call_id) for e in merged if e.subagent_run]
