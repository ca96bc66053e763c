"""A cancelled run closes CANCELED in Temporal, and how it ended stays readable.

On a real dev server: a run waiting for an approval is cancelled through `AgentRun.cancel`
and through the CLI; the UI's status filter (a visibility query on `ExecutionStatus`) finds
it, `result()` still says how it ended, and the cancel's reason is the run's.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import Client, WorkflowExecutionStatus

from cli_support import cli, cli_env  # noqa: F401  (a fixture)
from durable_tools import AgentConfig, DurableTools, RunStatus, ToolRegistry
from durable_tools.workflows import AgentWorkflow, ApprovalDecision
from support import answer, calls, running_worker, wait_for, write_script


def refund_registry(ran: list[str]) -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(approval=True)
    def refund(order_id: str) -> str:
        """Refund an order (needs approval)."""
        ran.append(order_id)
        return f"refunded {order_id}"

    return registry


async def canceled_ids(client: Client, run_id: str) -> list[str]:
    """The run's id once the visibility store lists it as Canceled (it lags a little)."""
    query = f"WorkflowId = '{run_id}' AND ExecutionStatus = 'Canceled'"
    deadline = asyncio.get_running_loop().time() + 10
    while True:
        found = [w.id async for w in client.list_workflows(query)]
        if found or asyncio.get_running_loop().time() > deadline:
            return found
        await asyncio.sleep(0.2)


async def test_a_cancelled_run_closes_canceled_and_reads_how_it_ended(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    ran: list[str] = []
    model = write_script(tmp_path, [calls(("r1", "refund", {"order_id": "A1"})), answer("no")])
    async with running_worker(client, refund_registry(ran), task_queue):
        run = await DurableTools(client, task_queue).start("refund A1", model=model)
        await wait_for(run, lambda s: bool(s.pending_approvals))
        await run.cancel("the customer withdrew")
        result = await run.result()
        description = await run.handle.describe()
        record = (await run.timeline())[0]
        found = await canceled_ids(client, run.run_id)
    assert description.status == WorkflowExecutionStatus.CANCELED
    assert result.status == RunStatus.CANCELLED
    assert result.reason == "the customer withdrew"
    assert record.status == "cancelled"
    assert found == [run.run_id]  # what the UI's "Canceled" filter asks
    assert ran == []  # the waiting call never ran


@pytest.mark.usefixtures("cli_env")
async def test_the_cli_cancels_a_run_and_says_it_ended_canceled(
    client: Client, task_queue: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ran: list[str] = []
    model = write_script(tmp_path, [calls(("r1", "refund", {"order_id": "A2"})), answer("no")])
    async with running_worker(client, refund_registry(ran), task_queue):
        run = await DurableTools(client, task_queue).start("refund A2", model=model)
        await wait_for(run, lambda s: bool(s.pending_approvals))
        code, _, err = await cli(capsys, "cancel", run.run_id, "--reason", "duplicate")
        assert code == 0, err
        result = await run.result()
        code, out, err = await cli(capsys, "show", run.run_id)
    assert result.status == RunStatus.CANCELLED and result.reason == "duplicate"
    assert (await run.handle.describe()).status == WorkflowExecutionStatus.CANCELED
    assert code == 0, err
    assert "cancelled" in out and "duplicate" in out
    assert ran == []


async def test_result_of_a_canceled_run_with_no_worker_says_why_at_once(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    ran: list[str] = []
    model = write_script(tmp_path, [calls(("r1", "refund", {"order_id": "A3"})), answer("no")])
    async with running_worker(client, refund_registry(ran), task_queue):
        run = await DurableTools(client, task_queue).start("refund A3", model=model)
        await wait_for(run, lambda s: bool(s.pending_approvals))
        await run.cancel("the customer withdrew")
        await run.result()
    # No worker polls the run's task queue now: the status query cannot be answered, and
    # the server holds it for about 30 s. result() asks it briefly, then reads the
    # cancellation's reason from the history.
    started = asyncio.get_running_loop().time()
    result = await asyncio.wait_for(run.result(), 20)
    assert asyncio.get_running_loop().time() - started < 20
    assert (result.status, result.reason) == (RunStatus.CANCELLED, "the customer withdrew")
    assert ran == []


async def test_a_cancel_that_arrives_as_the_run_continues_as_new_ends_it(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # The run's first turn ends past `continue_as_new_after_events` once its approval is
    # decided. The decision and Temporal's cancellation reach the run in one workflow
    # task (no worker runs while both are sent): the cancellation once came in while the
    # run waited to continue as new, and the new run went on without it.
    ran: list[str] = []
    registry = refund_registry(ran)

    @registry.tool(read_only=True)
    def look(order_id: str) -> str:
        """Look an order up."""
        return f"order {order_id}"

    model = write_script(
        tmp_path,
        [
            calls(
                ("l1", "look", {"order_id": "A4"}),
                ("l2", "look", {"order_id": "A5"}),
                ("r1", "refund", {"order_id": "A4"}),
            ),
            calls(("r2", "refund", {"order_id": "A5"})),
            answer("done"),
        ],
    )
    config = AgentConfig(model=model, continue_as_new_after_events=20)
    async with running_worker(client, registry, task_queue, max_cached_workflows=0):
        run = await DurableTools(client, task_queue).start("refund both", config=config)
        await wait_for(run, lambda s: bool(s.pending_approvals))
    await run.handle.signal(
        AgentWorkflow.decision_signal, ApprovalDecision(call_id="r1", approve=False)
    )
    await run.handle.cancel(reason="the customer withdrew")
    async with running_worker(client, registry, task_queue, max_cached_workflows=0):
        result = await asyncio.wait_for(run.result(), 30)
        snapshot = await run.status()
    assert (result.status, result.reason) == (RunStatus.CANCELLED, "the customer withdrew")
    assert snapshot.continued == 0  # it ended where it was cancelled
    assert (await run.handle.describe()).status == WorkflowExecutionStatus.CANCELED
    assert ran == []


async def test_a_cancel_reason_cannot_plant_a_link_in_the_uis_details(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # Whoever cancels (or closes a session, maybe with a chat user's words) writes the
    # reason; the UI's details are markdown, and the reason is their last line.
    planted = "[Approve here](https://evil.example) `x` **now**"
    model = write_script(tmp_path, [calls(("r1", "refund", {"order_id": "A6"})), answer("no")])
    async with running_worker(client, refund_registry([]), task_queue):
        run = await DurableTools(client, task_queue).start("refund A6", model=model)
        await wait_for(run, lambda s: bool(s.pending_approvals))
        await run.cancel(planted)
        result = await run.result()
        metadata = await run.handle.query(
            "__temporal_workflow_metadata", result_type=WorkflowMetadata
        )
    assert result.reason == planted  # the run's own record keeps it as it was
    [line] = [x for x in metadata.current_details.splitlines() if "evil.example" in x]
    # One code span around the whole reason: no link, no emphasis, no second span.
    assert line == "reason: `[Approve here](https://evil.example) 'x' **now**`", line
