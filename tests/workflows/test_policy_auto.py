"""Auto mode on a real dev server: confident verdicts decide, everything else asks a person."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from temporalio.client import Client

from durable_tools import (
    AgentConfig,
    AgentRun,
    ApprovalPolicy,
    AutoApproval,
    DurableTools,
    RunStatus,
    ToolRegistry,
)
from durable_tools.workflows import CriteriaSet, Evaluation, EvaluationRequest, RunSnapshot
from support import answer, assert_not_wedged, calls, running_worker, wait_for, write_script

CRITERIA = CriteriaSet(
    approve_when=("the amount is under 100 dollars",),
    deny_when=("the order is flagged",),
    min_confidence=0.8,
)


def registry(executed: list[Any]) -> ToolRegistry:
    tools = ToolRegistry()

    @tools.tool(approval=True, idempotent=True)
    def refund(order_id: str, amount_cents: int) -> str:
        """Refund an order."""
        executed.append(order_id)
        return "refunded"

    @tools.tool(approval=True, idempotent=True)
    def close_account(account: str) -> str:
        """Close an account."""
        executed.append(account)
        return "closed"

    return tools


def judge(request: EvaluationRequest) -> dict[str, Any]:
    """A worker-side evaluator: the order id says what it answers."""
    order = request.arguments.get("order_id", "")
    if order == "boom":
        raise RuntimeError("evaluator crashed")
    if order == "unsure":
        return {"verdict": "approve", "confidence": 0.3, "reasoning": "maybe"}
    if order == "flagged":
        return {"verdict": "deny", "confidence": 0.95, "reasoning": "flagged order"}
    return {"verdict": "approve", "confidence": 0.9, "reasoning": "small refund"}


async def slow(request: EvaluationRequest) -> Evaluation:
    await asyncio.sleep(60)
    return Evaluation(verdict="approve", confidence=1.0)


def pending(snapshot: RunSnapshot) -> set[str]:
    return {p.call_id for p in snapshot.pending_approvals}


def policy(evaluator: str) -> ApprovalPolicy:
    return ApprovalPolicy(
        auto=AutoApproval(evaluator=evaluator, criteria={"refund": CRITERIA}, timeout_seconds=20)
    )


async def events(run: AgentRun, name: str) -> list[str]:
    return [e.detail or "" for e in await run.events() if e.event == name]


async def test_confident_verdicts_decide_and_are_recorded(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    executed: list[str] = []
    model = write_script(
        tmp_path,
        [
            calls(("a", "refund", {"order_id": "ok", "amount_cents": 500})),
            calls(("b", "refund", {"order_id": "flagged", "amount_cents": 500})),
            answer("done"),
        ],
    )
    config = AgentConfig(model=model, approval=policy("judge"))
    async with running_worker(client, registry(executed), task_queue, evaluators={"judge": judge}):
        run = await DurableTools(client, task_queue).start("go", config=config)
        result = await run.result()
        timeline = {r.call_id: r for r in await run.timeline()}
        evaluated = await events(run, "auto.evaluated")
        await assert_not_wedged(run.handle)
    assert result.status == RunStatus.COMPLETED
    assert executed == ["ok"]
    assert timeline["a"].policy_layer == "auto" and timeline["a"].decided_by == "auto:judge"
    assert timeline["b"].status == "denied" and timeline["b"].decision_reason == "flagged order"
    assert evaluated[0].startswith("approve (confidence 0.90") and "small refund" in evaluated[0]


async def test_auto_mode_fails_closed(client: Client, task_queue: str, tmp_path: Path) -> None:
    """An evaluator error, a low-confidence verdict and a tool without criteria: a person."""
    executed: list[str] = []
    model = write_script(
        tmp_path,
        [
            calls(("e", "refund", {"order_id": "boom", "amount_cents": 1})),
            calls(("u", "refund", {"order_id": "unsure", "amount_cents": 1})),
            calls(("n", "close_account", {"account": "acct"})),
            answer("done"),
        ],
    )
    config = AgentConfig(model=model, approval=policy("judge"))
    async with running_worker(client, registry(executed), task_queue, evaluators={"judge": judge}):
        run = await DurableTools(client, task_queue).start("go", config=config)
        for call_id, event, before in (("e", "auto.failed", []), ("u", "auto.escalated", ["boom"])):
            await wait_for(run, lambda s, c=call_id: c in pending(s))
            while not await events(run, event):  # the evaluation has come back...
                await asyncio.sleep(0.1)
            assert executed == before  # ...and nothing ran on it
            await run.approve(call_id, decider="alice")
        await wait_for(run, lambda s: "n" in pending(s))
        await run.deny("n", decider="alice")
        await run.result()
        failed = await events(run, "auto.failed")
        escalated = await events(run, "auto.escalated")
        no_criteria = await events(run, "auto.no_criteria")
        timeline = {r.call_id: r.policy_layer for r in await run.timeline()}
        await assert_not_wedged(run.handle)
    assert "evaluator crashed" in failed[0]
    assert "confidence 0.30" in escalated[0]
    assert len(no_criteria) == 1
    assert timeline == {"e": "person", "u": "person", "n": "person"}
    assert executed == ["boom", "unsure"]


async def test_unknown_evaluator_goes_to_a_person(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    model = write_script(
        tmp_path, [calls(("a", "refund", {"order_id": "ok", "amount_cents": 1})), answer("x")]
    )
    config = AgentConfig(model=model, approval=policy("nobody"))
    async with running_worker(client, registry([]), task_queue):
        run = await DurableTools(client, task_queue).start("go", config=config)
        await wait_for(run, lambda s: "a" in pending(s))
        while not await events(run, "auto.failed"):
            await asyncio.sleep(0.1)
        assert "no evaluator 'nobody'" in (await events(run, "auto.failed"))[0]
        await run.approve("a")
        assert (await run.result()).status == RunStatus.COMPLETED
        await assert_not_wedged(run.handle)


async def test_a_person_who_answers_first_wins(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    model = write_script(
        tmp_path, [calls(("a", "refund", {"order_id": "ok", "amount_cents": 1})), answer("x")]
    )
    config = AgentConfig(model=model, approval=policy("slow"))
    async with running_worker(client, registry([]), task_queue, evaluators={"slow": slow}):
        run = await DurableTools(client, task_queue).start("go", config=config)
        await wait_for(run, lambda s: "a" in pending(s))
        await run.deny("a", decider="alice")
        await run.result()
        timeline = await run.timeline()
        cancelled = await events(run, "auto.cancelled")
        await assert_not_wedged(run.handle)
    assert timeline[0].decided_by == "alice" and timeline[0].policy_layer == "person"
    assert cancelled == ["a person decided first"]


async def test_a_model_evaluator_through_the_model_adapters(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    executed: list[str] = []
    verdict = {"verdict": "approve", "confidence": 0.99, "reasoning": "within limits"}
    judge_model = write_script(tmp_path, [answer(json.dumps(verdict))])
    model = write_script(
        tmp_path, [calls(("a", "refund", {"order_id": "ok", "amount_cents": 1})), answer("x")]
    )
    config = AgentConfig(model=model, approval=policy(f"model:{judge_model}"))
    async with running_worker(client, registry(executed), task_queue):
        run = await DurableTools(client, task_queue).start("go", config=config)
        await run.result()
        timeline = await run.timeline()
        await assert_not_wedged(run.handle)
    assert executed == ["ok"]
    assert timeline[0].policy_layer == "auto" and timeline[0].decision_reason == "within limits"


async def test_a_verdict_asked_under_a_policy_no_longer_in_force_decides_nothing(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    executed: list[Any] = []
    started, release = asyncio.Event(), asyncio.Event()

    async def held(request: EvaluationRequest) -> Evaluation:
        started.set()
        await release.wait()
        return Evaluation(verdict="approve", confidence=1.0, reasoning="looks fine")

    model = write_script(
        tmp_path,
        [calls(("r1", "refund", {"order_id": "A", "amount_cents": 5})), answer("done")],
    )
    config = AgentConfig(model=model, approval=policy("held"))
    async with running_worker(client, registry(executed), task_queue, evaluators={"held": held}):
        run = await DurableTools(client, task_queue).start("go", config=config)
        await asyncio.wait_for(started.wait(), 30)
        # Auto mode is turned off while the evaluator is still thinking.
        await run.set_policy(ApprovalPolicy(), changed_by="security")
        release.set()
        await wait_for_event(run, "auto.evaluated")
        snapshot = await wait_for(run, lambda s: "r1" in pending(s))
        assert executed == []  # the confident verdict did not approve it
        await run.deny("r1", decider="alice")
        await run.result()
        escalated = await events(run, "auto.escalated")
        await assert_not_wedged(run.handle)
    assert snapshot.status == RunStatus.AWAITING_APPROVAL
    assert escalated == ["auto mode changed; a person decides"]
    assert executed == []


async def wait_for_event(run: AgentRun, name: str) -> None:
    for _ in range(300):
        if await events(run, name):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"no {name} event")
