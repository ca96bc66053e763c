"""Many runs starting at once all reach their approval pause, and the worker never holds
more workflow tasks than it can finish inside their 10 s timeout (issue #15: with the SDK's
100 slots, 200 runs started at once timed out, were evicted and replayed, and stalled)."""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowHistory
from temporalio.worker import FixedSizeSlotSupplier, WorkerTuner

from durable_tools import AgentConfig, DurableTools, RunStatus, ToolRegistry, build_worker
from durable_tools.tools import FileSystemArtifactStore
from durable_tools.worker._plugin import WORKFLOW_TASK_SLOTS
from support import answer, assert_not_wedged, calls, running_worker, wait_for, write_script

RUNS = 30


def registry() -> ToolRegistry:
    tools = ToolRegistry()

    @tools.tool(approval=True)
    def transfer(amount: int) -> str:
        """Move money (needs a person's approval)."""
        return f"moved {amount}"

    return tools


def task_spans(history: WorkflowHistory) -> list[tuple[datetime, datetime]]:
    """(started, ended) of each workflow task a worker held, from the server's events."""
    spans = []
    started: datetime | None = None
    for event in history.events:
        if event.HasField("workflow_task_started_event_attributes"):
            started = event.event_time.ToDatetime()
        elif started is not None and (
            event.HasField("workflow_task_completed_event_attributes")
            or event.HasField("workflow_task_failed_event_attributes")
            or event.HasField("workflow_task_timed_out_event_attributes")
        ):
            spans.append((started, event.event_time.ToDatetime()))
            started = None
    return spans


def most_at_once(spans: list[tuple[datetime, datetime]]) -> int:
    """The most spans open at one instant (an end at the same instant as a start closes first)."""
    edges = sorted([(end, 0) for _, end in spans] + [(start, 1) for start, _ in spans])
    held = peak = 0
    for _, is_start in edges:
        held += 1 if is_start else -1
        peak = max(peak, held)
    return peak


async def test_the_worker_holds_a_bounded_number_of_workflow_tasks(
    client: Client, task_queue: str
) -> None:
    worker = build_worker(client, registry(), task_queue=task_queue)
    assert worker.config(active_config=True)["max_concurrent_workflow_tasks"] == WORKFLOW_TASK_SLOTS
    explicit = build_worker(
        client, registry(), task_queue=f"{task_queue}-explicit", max_concurrent_workflow_tasks=3
    )
    assert explicit.config(active_config=True)["max_concurrent_workflow_tasks"] == 3
    tuner = WorkerTuner.create_composite(
        workflow_supplier=FixedSizeSlotSupplier(50),
        activity_supplier=FixedSizeSlotSupplier(50),
        local_activity_supplier=FixedSizeSlotSupplier(50),
        nexus_supplier=FixedSizeSlotSupplier(50),
    )
    tuned = build_worker(client, registry(), task_queue=f"{task_queue}-tuned", tuner=tuner)
    assert (
        tuned.config(active_config=True)["max_concurrent_workflow_tasks"] is None
    )  # the tuner decides


@pytest.mark.slow
async def test_many_runs_started_at_once_all_pause(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    model = write_script(tmp_path, [calls(("t1", "transfer", {"amount": 5})), answer("done")])
    config = AgentConfig(name="many-paused", model=model)
    store = FileSystemArtifactStore(tmp_path / "artifacts")
    dt = DurableTools(client, task_queue)
    # Started before the worker: the whole burst waits on the queue, as after a deploy.
    runs = await asyncio.gather(*(dt.start(f"pay {i}", config=config) for i in range(RUNS)))
    async with running_worker(client, registry(), task_queue, artifact_store=store):
        for run in runs:
            snapshot = await wait_for(run, lambda s: bool(s.pending_approvals), timeout=120)
            assert snapshot.status == RunStatus.AWAITING_APPROVAL
        # `durable-tools pending` lists them all (visibility may trail the runs a little).
        ids = {run.run_id for run in runs}
        for _ in range(300):
            if ids <= {p.run_id for p in await dt.pending(limit=1000)}:
                break
            await asyncio.sleep(0.1)
        assert ids <= {p.run_id for p in await dt.pending(limit=1000)}
    spans = []
    for run in runs:
        handle = client.get_workflow_handle(run.run_id)
        await assert_not_wedged(handle)
        spans += task_spans(await handle.fetch_history())
    assert most_at_once(spans) <= WORKFLOW_TASK_SLOTS
