"""A worker killed (SIGKILL) after a run's cancel, while its tool ignored the cancel: a new
worker ends the run cancelled with the call's outcome unknown, and never runs the tool
again, though Temporal would retry it after a lost worker (issue #20, item 13)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from subprocess_workers import WorkerProcess, wait_until
from temporalio.client import Client

from durable_tools import AgentConfig as _AgentConfig, DurableTools, RunStatus
from support import answer, assert_not_wedged, calls, scheduled_activities, write_script

CANCEL_GRACE_SECONDS = _AgentConfig.model_fields["cancel_grace_seconds"].default  # the default

SCRIPT = Path(__file__).with_name("stubborn_worker.py")

STICKY_TIMEOUT = 10
"""How long the server waits for a dead worker's sticky queue (the SDK's default)."""


def _runs(work: Path) -> list[str]:
    path = work / "runs.txt"
    return path.read_text().splitlines() if path.exists() else []


@pytest.mark.slow  # ~20 s: the grace period, a new process and the dead sticky queue
async def test_worker_killed_after_cancel_never_runs_the_tool_again(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    address = client.service_client.config.target_host
    work = tmp_path / "work"
    model = write_script(tmp_path, [calls(("s1", "stubborn", {})), answer("never")])
    first = WorkerProcess(address, task_queue, work, script=SCRIPT)
    second: WorkerProcess | None = None
    try:
        await first.ready()
        run = await DurableTools(client, task_queue).start("work", model=model)
        await wait_until(lambda: _runs(work), 30, "the tool to start")
        await run.cancel("operator stopped it")

        async def cancel_seen() -> bool:
            return any(e.event == "run.cancel_requested" for e in await run.events())

        for _ in range(200):  # the worker recorded the cancel (and asked the tool to stop)
            if await cancel_seen():
                break
            await asyncio.sleep(0.05)
        first.kill()  # its tool dies unacknowledged; its heartbeats stop
        second = WorkerProcess(address, task_queue, work, script=SCRIPT)
        await second.ready()
        result = await asyncio.wait_for(run.result(), CANCEL_GRACE_SECONDS + STICKY_TIMEOUT + 20)
        record = (await run.timeline())[0]
        history = await run.handle.fetch_history()
        await assert_not_wedged(run.handle)
        (work / "release").touch()
    finally:
        if second is not None:
            second.stop()  # a tool it had started would be in runs.txt by now
        if first.process.poll() is None:
            first.stop()
    assert result.status == RunStatus.CANCELLED
    assert record.status == "outcome_unknown" and record.error_kind == "OutcomeUnknown"
    assert len(_runs(work)) == 1
    assert scheduled_activities(history).count("stubborn") == 1
