"""Approvals as durable pauses, on a real dev server."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowUpdateFailedError

from durable_tools import (
    AgentConfig,
    ApprovalPolicy,
    DurableTools,
    ExecutionStrategy,
    RunStatus,
    ToolRegistry,
)
from durable_tools.workflows import RunSnapshot
from support import answer, calls, running_worker, wait_for, write_script


def pending_ids(snapshot: RunSnapshot) -> set[str]:
    return {p.call_id for p in snapshot.pending_approvals}


def refund_registry(executed: list[Any]) -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(approval=True, idempotent=True, redact=("card",))
    def refund(order_id: str, amount_cents: int, card: str = "4111") -> str:
        """Refund an order."""
        executed.append((order_id, amount_cents))
        return f"refunded {amount_cents} on {order_id}"

    @registry.tool(approval=lambda args: args["amount_cents"] > 100, idempotent=True)
    def tip(amount_cents: int) -> str:
        """Leave a tip; large tips need approval."""
        executed.append(("tip", amount_cents))
        return f"tipped {amount_cents}"

    return registry


async def test_approve_runs_the_tool_and_records_who(
    client: Client, task_queue: str, tmp_path: Path
):
    executed: list[Any] = []
    model = write_script(
        tmp_path,
        [
            calls(("r1", "refund", {"order_id": "A1", "amount_cents": 500, "card": "4242"})),
            answer("refunded"),
        ],
    )
    async with running_worker(client, refund_registry(executed), task_queue):
        dt = DurableTools(client, task_queue)
        run = await dt.start("refund A1", model=model)
        snapshot = await wait_for(run, lambda s: "r1" in pending_ids(s))
        assert snapshot.status == RunStatus.AWAITING_APPROVAL
        pending = snapshot.pending_approvals[0]
        assert pending.tool == "refund"
        assert pending.arguments["card"] == "[redacted]"  # redaction rule of the tool
        assert len(pending.arguments_hash) == 64
        assert executed == []  # nothing runs before the decision

        # Visible to operators through search attributes.
        for _ in range(50):
            waiting = {s.run_id: s for s in await dt.pending()}
            if run.run_id in waiting:
                break
            await asyncio.sleep(0.2)
        assert waiting[run.run_id].awaiting_tool == "refund"
        assert waiting[run.run_id].pending_approvals == 1

        verdict = await run.approve(
            "r1", decider="alice", reason="customer called", arguments_hash=pending.arguments_hash
        )
        assert verdict == "approved"
        result = await run.result()
        events = await run.events()
    assert result.status == RunStatus.COMPLETED
    assert executed == [("A1", 500)]
    decided = [e for e in events if e.event == "approval.decided"]
    assert decided[0].detail == "approved by alice: customer called"


async def test_deny_tells_the_model_and_the_run_goes_on(
    client: Client, task_queue: str, tmp_path: Path
):
    executed: list[Any] = []
    model = write_script(
        tmp_path,
        [calls(("r1", "refund", {"order_id": "A1", "amount_cents": 500})), answer("ok, no refund")],
    )
    async with running_worker(client, refund_registry(executed), task_queue):
        run = await DurableTools(client, task_queue).start("refund A1", model=model)
        await wait_for(run, lambda s: "r1" in pending_ids(s))
        assert await run.deny("r1", decider="bob", reason="fraud suspected") == "denied"
        result = await run.result()
        conversation = await run.conversation()
        timeline = await run.timeline()
    assert result.status == RunStatus.COMPLETED and result.final_answer == "ok, no refund"
    assert executed == []
    reply = next(m.content for m in conversation if m.role == "tool")
    assert "denied by bob: fraud suspected" in (reply or "")
    assert "r1" in (reply or "")
    assert timeline[0].status == "denied"


async def test_deny_can_end_the_run_by_policy(client: Client, task_queue: str, tmp_path: Path):
    config = AgentConfig(
        model=write_script(
            tmp_path, [calls(("r1", "refund", {"order_id": "A", "amount_cents": 1})), answer("x")]
        ),
        approval=ApprovalPolicy(on_deny="end_run"),
    )
    async with running_worker(client, refund_registry([]), task_queue):
        run = await DurableTools(client, task_queue).start("refund", config=config)
        await wait_for(run, lambda s: "r1" in pending_ids(s))
        await run.deny("r1", decider="bob")
        result = await run.result()
    assert result.status == RunStatus.FAILED and "denied by bob" in (result.reason or "")


async def test_deadline_denies_escalates_or_fails(client: Client, task_queue: str, tmp_path: Path):
    executed: list[Any] = []
    step = calls(("r1", "refund", {"order_id": "A", "amount_cents": 9}))
    async with running_worker(client, refund_registry(executed), task_queue):
        dt = DurableTools(client, task_queue)
        deny = AgentConfig(
            model=write_script(tmp_path, [step, answer("timed out")]),
            approval=ApprovalPolicy(timeout_seconds=1, on_timeout="deny"),
        )
        run = await dt.start("deny on deadline", config=deny)
        result = await run.result()
        assert result.status == RunStatus.COMPLETED
        reply = next(m.content for m in await run.conversation() if m.role == "tool") or ""
        assert "denied by deadline" in reply

        fail = AgentConfig(
            model=write_script(tmp_path, [step, answer("never")]),
            approval=ApprovalPolicy(timeout_seconds=1, on_timeout="fail"),
        )
        result = await (await dt.start("fail on deadline", config=fail)).result()
        assert result.status == RunStatus.FAILED and "deadline" in (result.reason or "")

        escalate = AgentConfig(
            model=write_script(tmp_path, [step, answer("escalated")]),
            approval=ApprovalPolicy(
                deciders=("alice",),
                timeout_seconds=1,
                on_timeout="escalate",
                escalate_to=("manager",),
                escalation_timeout_seconds=60,
            ),
        )
        run = await dt.start("escalate", config=escalate)
        snapshot = await wait_for(
            run, lambda s: bool(s.pending_approvals) and s.pending_approvals[0].escalated
        )
        assert snapshot.pending_approvals[0].deciders == ["manager"]
        with pytest.raises(WorkflowUpdateFailedError):
            await run.approve("r1", decider="alice")  # no longer hers to decide
        await run.approve("r1", decider="manager")
        assert (await run.result()).status == RunStatus.COMPLETED
    assert executed == [("A", 9)]


async def test_validator_rejects_bad_decisions_before_history(
    client: Client, task_queue: str, tmp_path: Path
):
    executed: list[Any] = []
    config = AgentConfig(
        model=write_script(
            tmp_path,
            [calls(("r1", "refund", {"order_id": "A", "amount_cents": 5})), answer("done")],
        ),
        approval=ApprovalPolicy(deciders=("alice",)),
    )
    async with running_worker(client, refund_registry(executed), task_queue):
        run = await DurableTools(client, task_queue).start("refund", config=config)
        snapshot = await wait_for(run, lambda s: "r1" in pending_ids(s))
        with pytest.raises(WorkflowUpdateFailedError) as not_allowed:
            await run.approve("r1", decider="mallory")
        assert "may not decide" in str(not_allowed.value.cause)
        with pytest.raises(WorkflowUpdateFailedError) as stale:
            await run.approve("r1", decider="alice", arguments_hash="0" * 64)
        assert "hash does not match" in str(stale.value.cause)
        with pytest.raises(WorkflowUpdateFailedError) as unknown:
            await run.approve("nope", decider="alice")
        assert "no approval is pending" in str(unknown.value.cause)
        # A fire-and-forget signal with a bad decider is recorded and ignored.
        from durable_tools.workflows import AgentWorkflow, ApprovalDecision

        await run.handle.signal(
            AgentWorkflow.decision_signal,
            ApprovalDecision(call_id="r1", approve=True, decider="mallory"),
        )
        await wait_for(run, lambda s: "r1" in pending_ids(s))
        assert executed == []
        await run.handle.signal(
            AgentWorkflow.decision_signal,
            ApprovalDecision(
                call_id="r1",
                approve=True,
                decider="alice",
                arguments_hash=snapshot.pending_approvals[0].arguments_hash,
            ),
        )
        assert (await run.result()).status == RunStatus.COMPLETED
        events = [e.event for e in await run.events()]
    assert executed == [("A", 5)]
    assert "approval.rejected" in events
    history = await run.handle.fetch_history()
    # Rejected updates never enter history: only the signals do.
    assert "mallory" not in "".join(
        str(e.workflow_execution_update_accepted_event_attributes)
        for e in history.events
        if e.HasField("workflow_execution_update_accepted_event_attributes")
    )


async def test_parallel_approvals_decided_in_reverse_order(
    client: Client, task_queue: str, tmp_path: Path
):
    executed: list[Any] = []
    config = AgentConfig(
        model=write_script(
            tmp_path,
            [
                calls(
                    ("r1", "refund", {"order_id": "A", "amount_cents": 1}),
                    ("r2", "refund", {"order_id": "B", "amount_cents": 2}),
                ),
                answer("both handled"),
            ],
        ),
        strategy=ExecutionStrategy(mode="parallel", concurrency=4),
    )
    async with running_worker(client, refund_registry(executed), task_queue):
        run = await DurableTools(client, task_queue).start("two refunds", config=config)
        await wait_for(run, lambda s: pending_ids(s) == {"r1", "r2"})
        await run.approve("r2", decider="alice")
        await wait_for(run, lambda s: pending_ids(s) == {"r1"})
        for _ in range(100):
            if executed:
                break
            await asyncio.sleep(0.05)
        assert executed == [("B", 2)]  # r2 ran while r1 still waits
        await run.deny("r1", decider="alice", reason="duplicate")
        result = await run.result()
        replies = [m.tool_call_id for m in await run.conversation() if m.role == "tool"]
    assert result.status == RunStatus.COMPLETED
    assert executed == [("B", 2)]
    assert replies == ["r1", "r2"]


async def test_conditional_approval_predicate(client: Client, task_queue: str, tmp_path: Path):
    executed: list[Any] = []
    model = write_script(
        tmp_path,
        [
            calls(("small", "tip", {"amount_cents": 50}), ("big", "tip", {"amount_cents": 500})),
            answer("tipped"),
        ],
    )
    async with running_worker(client, refund_registry(executed), task_queue):
        run = await DurableTools(client, task_queue).start("tips", model=model)
        await wait_for(run, lambda s: pending_ids(s) == {"big"})
        assert executed == [("tip", 50)]
        await run.approve("big", decider="alice")
        assert (await run.result()).status == RunStatus.COMPLETED
    assert executed == [("tip", 50), ("tip", 500)]


async def test_waiting_run_survives_a_worker_restart(
    client: Client, task_queue: str, tmp_path: Path
):
    executed: list[Any] = []
    registry = refund_registry(executed)
    model = write_script(
        tmp_path, [calls(("r1", "refund", {"order_id": "Z", "amount_cents": 7})), answer("done")]
    )
    dt = DurableTools(client, task_queue)
    async with running_worker(client, registry, task_queue):
        run = await dt.start("refund Z", model=model)
        await wait_for(run, lambda s: "r1" in pending_ids(s))
    # The first worker is gone. A fresh one, with no cached workflow state, must rebuild the
    # paused run from history alone.
    async with running_worker(client, registry, task_queue, max_cached_workflows=0):
        snapshot = await wait_for(run, lambda s: "r1" in pending_ids(s))
        await run.approve(
            "r1", decider="alice", arguments_hash=snapshot.pending_approvals[0].arguments_hash
        )
        result = await run.result()
    assert result.status == RunStatus.COMPLETED
    assert executed == [("Z", 7)]


async def test_run_level_policy_requires_approval_for_mutating_tools(
    client: Client, task_queue: str, tmp_path: Path
):
    registry = ToolRegistry()
    ran: list[str] = []

    @registry.tool
    def write_note(text: str) -> str:
        """Write a note (mutating, no approval declared)."""
        ran.append(text)
        return "written"

    @registry.tool(read_only=True)
    def read_notes() -> list[str]:
        """Read notes."""
        return list(ran)

    config = AgentConfig(
        model=write_script(
            tmp_path,
            [calls(("w", "write_note", {"text": "hi"}), ("r", "read_notes", {})), answer("ok")],
        ),
        approval=ApprovalPolicy(require="mutating"),
    )
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("note", config=config)
        snapshot = await wait_for(run, lambda s: bool(s.pending_approvals))
        assert pending_ids(snapshot) == {"w"}
        await run.approve("w")
        assert (await run.result()).status == RunStatus.COMPLETED
    assert ran == ["hi"]


async def test_a_reused_call_id_needs_a_new_approval(
    client: Client, task_queue: str, tmp_path: Path
):
    executed: list[Any] = []
    model = write_script(
        tmp_path,
        [
            calls(("r", "refund", {"order_id": "A", "amount_cents": 1})),
            calls(("r", "refund", {"order_id": "B", "amount_cents": 2})),
            answer("done"),
        ],
    )
    async with running_worker(client, refund_registry(executed), task_queue):
        run = await DurableTools(client, task_queue).start("two refunds", model=model)
        await wait_for(run, lambda s: "r" in pending_ids(s))
        await run.approve("r", decider="alice")
        snapshot = await wait_for(
            run, lambda s: any(p.arguments.get("order_id") == "B" for p in s.pending_approvals)
        )
        assert executed == [("A", 1)]  # B waits: the first decision does not carry over
        await run.deny(
            "r", decider="alice", arguments_hash=snapshot.pending_approvals[0].arguments_hash
        )
        assert (await run.result()).status == RunStatus.COMPLETED
    assert executed == [("A", 1)]
