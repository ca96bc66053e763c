"""Hostile input from callers and models must never wedge a run.

A wedged run is one whose workflow task fails on every attempt: `AgentStatus` goes stale,
queries and updates fail, and a worker restart does not help. Each test sends what once
wedged a run, against the real dev server, then checks that the run still answers and
completes, and that its history shows no repeated `WorkflowTaskFailed`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from temporalio.client import Client, WorkflowFailureError, WorkflowUpdateFailedError

from durable_tools import AgentConfig, ApprovalPolicy, DurableTools, RunStatus, ToolRegistry
from durable_tools.protocol._limits import MAX_CALL_ID_CHARS, MAX_REASON_CHARS, MAX_STEER_CHARS
from durable_tools.workflows import AgentWorkflow, ApprovalDecision
from support import answer, assert_not_wedged, calls, running_worker, wait_for, write_script

MEGA = 1_100_000


def pay_registry(paid: list[int]) -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(approval=True, idempotent=True)
    def pay(account: str, amount_cents: int) -> str:
        """Pay from an account."""
        paid.append(amount_cents)
        return f"paid {amount_cents}"

    @registry.tool(read_only=True)
    def echo(text: str) -> str:
        """Echo a text."""
        return text[:20]

    return registry


async def test_none_payloads_on_every_signal_are_refused_not_fatal(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    paid: list[int] = []
    model = write_script(
        tmp_path, [calls(("p1", "pay", {"account": "a", "amount_cents": 5})), answer("done")]
    )
    async with running_worker(client, pay_registry(paid), task_queue):
        run = await DurableTools(client, task_queue).start("pay", model=model)
        snapshot = await wait_for(run, lambda s: bool(s.pending_approvals))
        for signal in ("decision", "steer", "authorization_completed"):
            await run.handle.signal(signal, None)
        with pytest.raises(WorkflowUpdateFailedError):
            await run.handle.execute_update("decide", None)
        # The run still answers queries and takes a valid decision.
        pending = snapshot.pending_approvals[0]
        await run.approve("p1", arguments_hash=pending.arguments_hash)
        result = await run.result()
        events = [e.event for e in await run.events()]
        await assert_not_wedged(run.handle, allowed=0)
    assert result.status == RunStatus.COMPLETED
    assert paid == [5]
    assert {"approval.rejected", "run.steer_refused", "authorization.ignored"} <= set(events)


async def test_a_megabyte_call_id_is_shortened_and_the_call_runs(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    huge_id = "c" * 1_200_000
    model = write_script(tmp_path, [calls((huge_id, "echo", {"text": "hi"})), answer("ok")])
    async with running_worker(client, pay_registry([]), task_queue):
        run = await DurableTools(client, task_queue).start("echo", model=model)
        result = await run.result()
        conversation = await run.conversation()
        timeline = await run.timeline()
        await assert_not_wedged(run.handle, allowed=0)
    assert result.status == RunStatus.COMPLETED
    assistant = next(m for m in conversation if m.tool_calls)
    short = assistant.tool_calls[0].id
    assert len(short) <= MAX_CALL_ID_CHARS
    # The conversation stays well formed: the tool message answers the same (short) id.
    tool_message = next(m for m in conversation if m.role == "tool")
    assert tool_message.tool_call_id == short
    assert timeline[0].status == "completed"


async def test_oversized_steering_is_refused_and_the_run_goes_on(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    model = write_script(
        tmp_path, [calls(("p1", "pay", {"account": "a", "amount_cents": 5})), answer("done")]
    )
    async with running_worker(client, pay_registry([]), task_queue):
        run = await DurableTools(client, task_queue).start("pay", model=model)
        snapshot = await wait_for(run, lambda s: bool(s.pending_approvals))
        for _ in range(2):
            await run.handle.signal("steer", "x" * MEGA)
        await run.steer("also say thanks")
        await run.approve("p1", arguments_hash=snapshot.pending_approvals[0].arguments_hash)
        result = await run.result()
        conversation = await run.conversation()
        events = await run.events()
        await assert_not_wedged(run.handle, allowed=0)
    assert result.status == RunStatus.COMPLETED
    refused = [e for e in events if e.event == "run.steer_refused"]
    assert len(refused) == 2 and f"{MAX_STEER_CHARS:,}" in (refused[0].detail or "")
    users = [m.content for m in conversation if m.role == "user"]
    assert users[-1] == "also say thanks" and all(len(u or "") < MEGA for u in users)


async def test_an_oversized_decision_reason_is_rejected_and_continue_as_new_still_fits(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    paid: list[int] = []
    steps: list[dict[str, Any]] = [
        calls((f"p{i}", "pay", {"account": "a", "amount_cents": i})) for i in range(1, 4)
    ]
    config = AgentConfig(
        model=write_script(tmp_path, [*steps, answer("done")]),
        continue_as_new_after_events=20,
    )
    async with running_worker(client, pay_registry(paid), task_queue):
        run = await DurableTools(client, task_queue).start("pay thrice", config=config)
        for i in range(1, 4):
            snapshot = await wait_for(
                run, lambda s, i=i: any(p.call_id == f"p{i}" for p in s.pending_approvals)
            )
            digest = snapshot.pending_approvals[0].arguments_hash
            # Through the update: rejected before history, with the limit named.
            bad = {"call_id": f"p{i}", "approve": True, "reason": "r" * MEGA}
            with pytest.raises(WorkflowUpdateFailedError):
                await run.handle.execute_update("decide", bad)
            # Through the signal: dropped (it cannot be decoded), the run unharmed.
            await run.handle.signal("decision", bad)
            await run.approve(f"p{i}", arguments_hash=digest, reason="ok " * 10)
        result = await run.result()
        await assert_not_wedged(run.handle, allowed=0)
    assert result.status == RunStatus.COMPLETED
    assert paid == [1, 2, 3]
    with pytest.raises(ValidationError, match=str(MAX_REASON_CHARS)):
        ApprovalDecision(call_id="p1", approve=True, reason="r" * (MAX_REASON_CHARS + 1))


async def test_a_reused_call_id_needs_the_hash_of_the_request_shown(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    paid: list[int] = []
    model = write_script(
        tmp_path,
        [
            calls(("c1", "pay", {"account": "a", "amount_cents": 5})),
            calls(("c1", "pay", {"account": "a", "amount_cents": 5_000_000})),
            answer("done"),
        ],
    )
    async with running_worker(client, pay_registry(paid), task_queue):
        run = await DurableTools(client, task_queue).start("pay", model=model)
        first = await wait_for(run, lambda s: bool(s.pending_approvals))
        # The first use of an id: a decision without a hash can only mean this request.
        await run.approve("c1")
        second = await wait_for(
            run,
            lambda s: (
                bool(s.pending_approvals)
                and s.pending_approvals[0].arguments_hash
                != first.pending_approvals[0].arguments_hash
            ),
        )
        # The id is reused now: without the hash (as an approver who saw turn 1 would send
        # it), the decision is refused; with the old request's hash too.
        with pytest.raises(WorkflowUpdateFailedError):
            await run.approve("c1")
        with pytest.raises(WorkflowUpdateFailedError):
            await run.approve("c1", arguments_hash=first.pending_approvals[0].arguments_hash)
        await run.handle.signal(
            AgentWorkflow.decision_signal, ApprovalDecision(call_id="c1", approve=True)
        )
        assert paid == [5]
        await run.deny("c1", arguments_hash=second.pending_approvals[0].arguments_hash)
        result = await run.result()
        await assert_not_wedged(run.handle, allowed=0)
    assert result.status == RunStatus.COMPLETED
    assert paid == [5]


def test_escalation_without_deciders_is_refused_at_configuration() -> None:
    with pytest.raises(ValidationError, match="escalate_to"):
        ApprovalPolicy(on_timeout="escalate", timeout_seconds=5)


async def test_a_start_with_invalid_input_fails_the_run_instead_of_wedging_it(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    raw_input = {
        "prompt": "pay",
        "config": {
            "model": write_script(tmp_path, [answer("x")]),
            "approval": {"on_timeout": "escalate", "timeout_seconds": 5},
        },
    }
    async with running_worker(client, pay_registry([]), task_queue):
        handle = await client.start_workflow(
            "AgentWorkflow", raw_input, id=f"raw-{task_queue}", task_queue=task_queue
        )
        with pytest.raises(WorkflowFailureError) as failed:
            await handle.result()
        await assert_not_wedged(handle, allowed=0)
    assert "escalate_to" in str(failed.value.cause)
