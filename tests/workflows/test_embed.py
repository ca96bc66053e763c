"""Agents run from a user's own workflow, on a real dev server: as a child workflow
(`run_agent`, `start_agent`) and embedded in the host (`AgentLoop`)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from temporalio import workflow
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.service import RPCError

with workflow.unsafe.imports_passed_through():
    from durable_tools import (
        AgentConfig,
        AgentResult,
        DurableTools,
        Message,
        RunEvent,
        RunStatus,
        ToolRegistry,
    )
    from durable_tools.workflows import (
        AgentInput,
        AgentLoop,
        ApprovalDecision,
        RunSnapshot,
        run_agent,
        start_agent,
    )
from support import answer, assert_not_wedged, calls, running_worker, wait_for, write_script


@workflow.defn(sandboxed=True)
class ReportWorkflow:
    """A user's workflow that asks an agent (a child run) and returns its answer."""

    @workflow.run
    async def run(self, configs: list[AgentConfig]) -> list[str]:
        first = await run_agent("summarise the orders", config=configs[0])
        second = await start_agent("say it again", config=configs[1])
        result: AgentResult = await second
        # Needs an approval: the operator decides on the child run, by its id.
        third = await run_agent(
            "refund A1", config=configs[2], id=f"{workflow.info().workflow_id}.refund"
        )
        return [
            first.final_answer or "",
            result.final_answer or "",
            second.id,
            third.final_answer or "",
        ]


@workflow.defn(sandboxed=True)
class HostWorkflow:
    """A user's workflow with an agent loop inside, its handlers prefixed `agent_`."""

    @workflow.init
    def __init__(self, input: AgentInput) -> None:
        self.loop = AgentLoop(input)
        self.loop.register_handlers(prefix="agent_")

    @workflow.run
    async def run(self, input: AgentInput) -> str:
        result = await self.loop.run()
        return f"{result.status.value}: {result.final_answer}"

    @workflow.query
    def status(self) -> str:
        """The host's own query of the same name as the agent's, left alone by the prefix."""
        return "host ok"


def order_registry(ran: list[Any]) -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    def count_orders() -> int:
        """How many orders there are."""
        ran.append("count")
        return 3

    @registry.tool(approval=True, idempotent=True)
    def refund(order_id: str) -> str:
        """Refund an order (needs approval)."""
        ran.append(f"refund {order_id}")
        return f"refunded {order_id}"

    return registry


async def test_run_agent_from_a_user_workflow(client: Client, task_queue: str, tmp_path: Path):
    ran: list[Any] = []
    first = write_script(tmp_path, [calls(("c1", "count_orders", {})), answer("3 orders")])
    second = write_script(tmp_path, [answer("still 3 orders")])
    third = write_script(tmp_path, [calls(("r1", "refund", {"order_id": "A1"})), answer("done")])
    configs = [AgentConfig(model=first), AgentConfig(model=second), AgentConfig(model=third)]
    async with running_worker(client, order_registry(ran), task_queue, workflows=[ReportWorkflow]):
        handle = await client.start_workflow(
            ReportWorkflow.run, configs, id=f"report-{task_queue}", task_queue=task_queue
        )
        dt = DurableTools(client, task_queue)
        refund_run = dt.run(f"report-{task_queue}.refund")
        for _ in range(100):  # the host starts the child after its first two
            try:
                snapshot = await wait_for(refund_run, lambda s: bool(s.pending_approvals))
                break
            except RPCError:
                await asyncio.sleep(0.1)
        for _ in range(50):  # listed for operators, like any run
            if refund_run.run_id in {s.run_id for s in await dt.pending()}:
                break
            await asyncio.sleep(0.2)
        else:
            raise AssertionError("the child run is not listed as pending")
        assert ran == ["count"]
        await refund_run.approve(
            "r1", decider="alice", arguments_hash=snapshot.pending_approvals[0].arguments_hash
        )
        first, second, second_id, third_answer = await handle.result()
        assert [first, second, third_answer] == ["3 orders", "still 3 orders", "done"]
        # Default child ids: the host's id, numbered in start order.
        assert second_id == f"report-{task_queue}.agent-2"
        assert (await dt.run(f"report-{task_queue}.agent-1").result()).final_answer == "3 orders"
        assert ran == ["count", "refund A1"]
        await assert_not_wedged(handle)


async def test_embedded_loop_answers_through_the_host(
    client: Client, task_queue: str, tmp_path: Path
):
    ran: list[Any] = []
    model = write_script(
        tmp_path, [calls(("r1", "refund", {"order_id": "A1"})), answer("refunded A1")]
    )
    agent_input = AgentInput(prompt="refund A1", config=AgentConfig(model=model))
    async with running_worker(client, order_registry(ran), task_queue, workflows=[HostWorkflow]):
        handle = await client.start_workflow(
            HostWorkflow.run, agent_input, id=f"host-{task_queue}", task_queue=task_queue
        )
        snapshot = await _wait_pending(handle)
        pending = snapshot.pending_approvals[0]
        assert pending.call_id == "r1" and ran == []
        assert await handle.query(HostWorkflow.status) == "host ok"

        # A decision for a call that is not pending is refused by the validator.
        with pytest.raises(WorkflowUpdateFailedError):
            await handle.execute_update(
                "agent_decide",
                ApprovalDecision(call_id="nope", approve=True, decider="alice"),
            )
        await handle.signal("agent_steer", "also say thanks")
        verdict = await handle.execute_update(
            "agent_decide",
            ApprovalDecision(
                call_id="r1",
                approve=True,
                decider="alice",
                arguments_hash=pending.arguments_hash,
            ),
            result_type=str,
        )
        assert verdict == "approved"
        assert await handle.result() == "completed: refunded A1"
        assert ran == ["refund A1"]
        final = await handle.query("agent_status", result_type=RunSnapshot)
        assert final.status == RunStatus.COMPLETED and final.turn == 2
        await assert_not_wedged(handle)
        # The steer reached the model as a user message before its second turn.
        conversation = await handle.query("agent_conversation", result_type=list[Message])
        said = [m.content for m in conversation if m.role == "user"]
        assert said == ["refund A1", "also say thanks"]


async def test_embedded_loop_cancels_through_the_host(
    client: Client, task_queue: str, tmp_path: Path
):
    ran: list[Any] = []
    model = write_script(tmp_path, [calls(("r1", "refund", {"order_id": "A1"}))])
    agent_input = AgentInput(prompt="refund A1", config=AgentConfig(model=model))
    async with running_worker(client, order_registry(ran), task_queue, workflows=[HostWorkflow]):
        handle = await client.start_workflow(
            HostWorkflow.run, agent_input, id=f"host-{task_queue}", task_queue=task_queue
        )
        await _wait_pending(handle)
        # Junk through the host's handlers is refused or dropped (as by the agent
        # workflow), never fails the host's task.
        await handle.signal("agent_steer", 42)
        await handle.signal("agent_decision", "approve everything")
        await handle.signal("agent_cancel", "changed my mind")
        assert await handle.result() == "cancelled: None"
        final = await handle.query("agent_status", result_type=RunSnapshot)
        assert final.reason == "changed my mind"
        events = await handle.query("agent_events", result_type=list[RunEvent])
        assert "run.steer_refused" in {e.event for e in events}
        assert ran == []
        await assert_not_wedged(handle)


async def _wait_pending(handle: Any) -> RunSnapshot:
    for _ in range(150):
        snapshot: RunSnapshot = await handle.query("agent_status", result_type=RunSnapshot)
        if snapshot.pending_approvals:
            return snapshot
        await asyncio.sleep(0.1)
    raise AssertionError(f"no approval became pending: {snapshot}")
