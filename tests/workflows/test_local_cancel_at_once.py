"""A local activity cancelled in the very step it was started is cancelled, not left to
run unseen (`workflows/run/_local_activity.start_local`)."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from pathlib import Path

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.exceptions import ActivityError
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    from durable_tools.workflows.run._local_activity import start_local

SECONDS = 2.0
"""How long the activity works when nothing stops it."""


@activity.defn(name="slow_local")
async def slow_local(log: str) -> str:
    """Work `SECONDS`, noting in `log` whether it finished or was cancelled."""
    try:
        await asyncio.sleep(SECONDS)
    except asyncio.CancelledError:
        with open(log, "a") as handle:
            handle.write("cancelled\n")
        raise
    with open(log, "a") as handle:
        handle.write("finished\n")
    return "finished"


@workflow.defn(sandboxed=True)
class CancelAtOnce:
    @workflow.run
    async def run(self, log: str) -> str:
        task = start_local(
            "slow_local",
            log,
            result_type=str,
            start_to_close_timeout=timedelta(seconds=30),
            cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        )
        task.cancel()  # before the task ever ran
        try:
            await task
        except (asyncio.CancelledError, ActivityError) as error:
            outcome = type(error).__name__
        else:
            outcome = "not cancelled"
        # Stay open longer than the activity works: one left running unseen finishes
        # first (a local activity even holds the workflow task until it ends).
        await workflow.sleep(timedelta(seconds=SECONDS * 2))
        return outcome


async def test_local_activity_cancelled_before_its_task_ran_is_cancelled(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    log = tmp_path / "log.txt"
    async with Worker(
        client, task_queue=task_queue, workflows=[CancelAtOnce], activities=[slow_local]
    ):
        outcome = await client.execute_workflow(
            CancelAtOnce.run, str(log), id=f"at-once-{uuid.uuid4()}", task_queue=task_queue
        )
    assert outcome == "CancelledError"
    assert "finished" not in (log.read_text() if log.exists() else "")
