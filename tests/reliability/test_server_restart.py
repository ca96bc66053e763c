"""The server stops (SIGTERM) with runs in flight and a run paused on approval; it starts
again on the same SQLite file, and nothing is lost."""

from __future__ import annotations

import asyncio
from pathlib import Path

from durable_tools import DurableTools, RunStatus, ToolRegistry
from durable_tools.server import DevServer
from durable_tools.tools import FileSystemArtifactStore
from support import (
    answer,
    assert_not_wedged,
    calls,
    free_port,
    running_worker,
    wait_for,
    write_script,
)


def registry(started: asyncio.Event, release: asyncio.Event, executed: list[str]) -> ToolRegistry:
    tools = ToolRegistry()

    @tools.tool(read_only=True, start_to_close_timeout=30)
    async def slow_report(name: str) -> str:
        """A report that finishes only once the test lets it (after the restart)."""
        started.set()
        await release.wait()
        executed.append(name)
        return f"report {name} ready"

    @tools.tool(approval=True, idempotent=True)
    def refund(order_id: str) -> str:
        """Refund an order (needs approval)."""
        executed.append(f"refund {order_id}")
        return f"refunded {order_id}"

    return tools


async def test_runs_survive_a_server_restart(tmp_path: Path) -> None:
    server = DevServer(tmp_path / "server", port=free_port(), headless=True)
    store = FileSystemArtifactStore(tmp_path / "artifacts")
    queue = "restart"
    started = asyncio.Event()
    release = asyncio.Event()
    executed: list[str] = []
    tools = registry(started, release, executed)
    slow_model = write_script(
        tmp_path, [calls(("s1", "slow_report", {"name": "q3"})), answer("report done")]
    )
    refund_model = write_script(
        tmp_path, [calls(("r1", "refund", {"order_id": "A7"})), answer("refund done")]
    )
    client = await server.start()
    try:
        async with running_worker(client, tools, queue, artifact_store=store):
            dt = DurableTools(client, queue)
            slow_runs = [await dt.start(f"report {i}", model=slow_model) for i in range(3)]
            paused = await dt.start("refund A7", model=refund_model)
            pending = await wait_for(paused, lambda s: bool(s.pending_approvals), timeout=20)
            await asyncio.wait_for(started.wait(), 15)
            assert pending.pending_approvals[0].call_id == "r1"
        # Worker gone (its running tools cancelled); the server goes down with every run open.
        reports_before_stop = executed.count("q3")
        assert await server.stop() is not None
        assert not server.running
        client = await server.start()  # same SQLite file, same port
        release.set()
        async with running_worker(client, tools, queue, artifact_store=store):
            dt = DurableTools(client, queue)
            paused = dt.run(paused.run_id)
            snapshot = await wait_for(paused, lambda s: bool(s.pending_approvals), timeout=20)
            assert snapshot.status == RunStatus.AWAITING_APPROVAL
            assert await paused.approve("r1", decider="carol") == "approved"
            results = await asyncio.wait_for(
                asyncio.gather(*(dt.run(r.run_id).result() for r in [*slow_runs, paused])), 60
            )
            timelines = [await dt.run(r.run_id).timeline() for r in [*slow_runs, paused]]
            events = await paused.events()
            for run in [*slow_runs, paused]:
                await assert_not_wedged(dt.run(run.run_id).handle)
    finally:
        await server.stop()

    assert reports_before_stop == 0  # every report was in flight across the restart
    assert [r.status for r in results] == [RunStatus.COMPLETED] * 4
    assert [r.final_answer for r in results] == ["report done"] * 3 + ["refund done"]
    for timeline in timelines[:3]:
        assert [(t.call_id, t.status) for t in timeline] == [("s1", "completed")]
        assert timeline[0].result == "report q3 ready"
    assert [(t.call_id, t.status) for t in timelines[3]] == [("r1", "completed")]
    assert executed.count("refund A7") == 1
    decided = [e for e in events if e.event == "approval.decided"]
    assert [e.detail for e in decided] == ["approved by carol"]
    names = [e.event for e in events]
    assert names.index("approval.requested") < names.index("approval.decided")
