"""An agent loop embedded in a host workflow that goes on after the loop was cancelled:
a tool that ignored the cancel is recorded when it ends after all (`tool.ended_late`),
and never runs again (issue #20, item 13)."""

from __future__ import annotations

import asyncio
import threading
from datetime import timedelta
from pathlib import Path

from temporalio import workflow
from temporalio.client import Client

with workflow.unsafe.imports_passed_through():
    from durable_tools import AgentConfig, RunEvent, ToolContext, ToolRegistry
    from durable_tools.workflows import AgentInput, AgentLoop

    # Through too: the sandbox re-imports this module to check the host workflow, and the
    # support helpers import native extensions (cryptography) that must not load twice.
    from support import answer, calls, running_worker, write_script

NEVER = 300


@workflow.defn(sandboxed=True)
class OutlivingHost:
    """Runs an agent loop, then stays open until the loop's events say a tool ended late."""

    @workflow.init
    def __init__(self, input: AgentInput) -> None:
        self.loop = AgentLoop(input)
        self.loop.register_handlers(prefix="agent_")
        self.status = "running"

    @workflow.run
    async def run(self, input: AgentInput) -> list[RunEvent]:
        result = await self.loop.run()
        self.status = result.status.value
        await workflow.wait_condition(
            lambda: any(e.event == "tool.ended_late" for e in self.loop.events()),
            timeout=timedelta(seconds=120),
        )
        return list(self.loop.events())

    @workflow.query
    def loop_status(self) -> str:
        return self.status


async def test_embedded_loop_records_a_stubborn_tool_that_ends_after_the_cancel(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    runs: list[str] = []
    started, release = threading.Event(), threading.Event()
    registry = ToolRegistry()

    @registry.tool(read_only=True, local=False, start_to_close_timeout=NEVER)
    def stubborn(ctx: ToolContext) -> str:
        """Ignore the cancel."""
        runs.append("ran")
        started.set()
        release.wait(NEVER)
        return "done after all"

    model = write_script(tmp_path, [calls(("s1", "stubborn", {})), answer("never")])
    config = AgentConfig(model=model)
    agent_input = AgentInput(prompt="work", config=config)
    async with running_worker(client, registry, task_queue, workflows=[OutlivingHost]):
        handle = await client.start_workflow(
            OutlivingHost.run, agent_input, id=f"host-{task_queue}", task_queue=task_queue
        )
        await asyncio.wait_for(asyncio.to_thread(started.wait), 20)
        await handle.signal("agent_cancel", "changed my mind")
        for _ in range(int((config.cancel_grace_seconds + 10) / 0.1)):
            if await handle.query(OutlivingHost.loop_status) != "running":
                break
            await asyncio.sleep(0.1)
        assert await handle.query(OutlivingHost.loop_status) == "cancelled"
        release.set()  # the tool ends after the loop stopped waiting for it
        events = await asyncio.wait_for(handle.result(), 30)
    names = [e.event for e in events if e.call_id == "s1"]
    assert names == ["tool.started", "tool.outcome_unknown", "tool.ended_late"]
    late = next(e for e in events if e.event == "tool.ended_late")
    assert late.detail == "the tool completed after the run stopped waiting for it"
    assert runs == ["ran"]
