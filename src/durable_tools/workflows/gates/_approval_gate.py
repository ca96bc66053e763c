"""Stage 2a of a call: the approval gate. The policy's verdict, then a person's decision.

`approve` asks the policy about the call (`_approval_policy.rule`: the pure `decide`, and
the worker's preflight and grant store where it consults them), acts on the verdict, and
for a call that needs a person waits durably for the decision, racing auto mode's
evaluator when the verdict names one; a denial becomes a refusal message for the model (or
ends the run, by policy).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import timedelta

from temporalio import workflow

from durable_tools._activities._types import PreflightResult
from durable_tools.messages import Message, ToolCall
from durable_tools.policy._decide import Verdict
from durable_tools.policy._decisions import arguments_hash
from durable_tools.protocol._records import ToolCallRecord
from durable_tools.protocol._types import RunStatus
from durable_tools.protocol._wait_types import ApprovalDecision, PendingApproval
from durable_tools.tools._approval_summary import call_summary
from durable_tools.workflows.gates._approval_policy import PENDING_REFIT_PATCH, rule
from durable_tools.workflows.gates._grants import grant_from_decision
from durable_tools.workflows.gates._policy_auto import evaluate_call
from durable_tools.workflows.gates._wait import (
    answer_of,
    close_wait,
    expire_wait,
    open_wait,
    wait_for_answer,
)
from durable_tools.workflows.observe._metrics import approval_decided, approval_requested
from durable_tools.workflows.observe._notify import notify_approval
from durable_tools.workflows.observe._visibility import evicting, publish
from durable_tools.workflows.run._replies import denied_reply
from durable_tools.workflows.run._state import EndRun, RunState
from durable_tools.workflows.run._valid_call import ValidCall
from durable_tools.workflows.run._wait_maps import GateState

__all__ = ["Gate", "approve"]


@dataclass(frozen=True)
class Gate:
    """What the approval gate decided: a refusal for the model, or go on."""

    refusal: Message | None = None
    """Set when the call was denied: the message the model gets instead of a result."""
    preflight: PreflightResult | None = None
    """The preflight's answer, when one ran (OAuth grant or authorization URL)."""


async def approve(state: RunState, valid: ValidCall, record: ToolCallRecord) -> Gate:
    """Run the approval gate: no approval needed, approved, or denied (a refusal).

    The layers of the run's live policy decide in order (`durable_tools.policy.decide`):
    skip switch, deny list, the tool's and run's own rules, safe tools, allow list, standing
    grants, auto mode, then a person. The layer that decided is kept on the call's record.
    """
    ruling = await rule(state, valid)
    verdict, checked = ruling.verdict, ruling.preflight
    if verdict.action == "deny":
        record.policy_layer = verdict.layer
        state.event("policy.denied", valid.call, detail=verdict.detail)
        return _refuse(state.gates, valid, record, f"denied by policy ({verdict.layer})")
    if verdict.action == "allow":
        if verdict.layer != "rules":
            record.policy_layer = verdict.layer
            detail = (
                verdict.detail
                if verdict.layer == "skip_all"
                else f"{verdict.layer}: {verdict.detail}"
            )
            state.event("policy.allowed", valid.call, detail=detail)
        return Gate(preflight=checked)
    record.status = "awaiting_approval"
    decision = await _await_decision(state, valid, verdict, checked)
    record.policy_layer = "auto" if decision.decider.startswith("auto:") else "person"
    record.decided_by = decision.decider
    record.decided_at = workflow.now()
    record.decision_reason = decision.reason
    if decision.approve:
        await grant_from_decision(state, valid, decision)
        return Gate(preflight=checked)
    text = f"denied by {decision.decider}" + (f": {decision.reason}" if decision.reason else "")
    return _refuse(state.gates, valid, record, text)


def _refuse(gates: GateState, valid: ValidCall, record: ToolCallRecord, text: str) -> Gate:
    spec, call = valid.spec, valid.call
    record.status = "denied"
    record.result = text[:300]
    if gates.policy.on_deny == "end_run":
        raise EndRun(RunStatus.FAILED, f"tool call {call.id} ({spec.name}) {text}")
    return Gate(refusal=denied_reply(call.id, spec.name, text))


async def _await_decision(
    state: RunState, valid: ValidCall, verdict: Verdict, checked: PreflightResult | None
) -> ApprovalDecision:
    call, spec = valid.call, valid.spec
    policy = state.gates.policy
    now = workflow.now()
    timeout = policy.timeout_seconds
    pending = PendingApproval(
        call_id=call.id,
        tool=spec.name,
        tool_label=spec.label,
        arguments=valid.redacted,
        arguments_hash=arguments_hash(valid.arguments),
        deciders=list(verdict.deciders),
        requested_at=now,
        deadline=now + timedelta(seconds=timeout) if timeout else None,
        approvals_required=verdict.approvals_required,
        summary=call_summary(spec, valid.arguments, checked.summary if checked else None),
    )
    waits = state.gates.approvals
    approval_requested(spec.name)
    open_wait(state, waits, call, pending, detail=f"hash {pending.arguments_hash[:12]}")
    evaluation = _start_evaluation(state, valid, verdict, pending)
    try:
        shown = (
            f"approval deadline: {pending.summary} ({spec.display_name})"
            if pending.summary
            else f"approval deadline: {spec.display_name} {call.id}"
        )
        while not await wait_for_answer(state, waits, call.id, timeout, summary=shown):
            if state.gates.policy is not policy and workflow.patched(PENDING_REFIT_PATCH):
                policy = state.gates.policy  # changed while the call waited: it rules now
            if policy.on_timeout == "escalate" and not pending.escalated and policy.escalate_to:
                timeout = policy.escalation_timeout_seconds or policy.timeout_seconds
                pending.escalated = True
                pending.deciders = list(policy.escalate_to)
                pending.deadline = workflow.now() + timedelta(seconds=timeout or 0)
                state.event("approval.escalated", call, detail=", ".join(pending.deciders))
                notify_approval(state, "approval.escalated", pending)
                publish(state)
                continue
            if policy.on_timeout == "fail":
                raise EndRun(
                    RunStatus.FAILED,
                    f"approval of tool call {call.id} ({spec.name}) passed its deadline",
                )
            waits.answered[call.id] = ApprovalDecision(
                call_id=call.id,
                approve=False,
                decider="deadline",
                reason="no decision before the deadline",
            )
            expire_wait(state, waits, call, pending)
            break
        decision = answer_of(state, waits, call.id, take=False)
        assert decision is not None  # nothing else wakes an approval's wait
        approval_decided(spec.name, decision, pending.requested_at)
        notify_approval(state, "approval.decided", pending, decision)
        return decision
    finally:
        if evaluation is not None and not evaluation.done() and not evicting():
            # A person answered first: the evaluation is no longer wanted.
            _cancel(state, call, evaluation)
        close_wait(state, waits, call.id)


def _cancel(state: RunState, call: ToolCall, task: asyncio.Task[None]) -> None:
    why = (
        "a person decided first"
        if call.id in state.gates.approvals.answered
        else "the approval ended"
    )
    state.event("auto.cancelled", call, detail=why)
    task.cancel()


def _start_evaluation(
    state: RunState, valid: ValidCall, verdict: Verdict, pending: PendingApproval
) -> asyncio.Task[None] | None:
    """Start auto mode's evaluator, racing the person; None when the verdict names no
    evaluator or the tool has no criteria set (then the person alone decides)."""
    if verdict.auto is None:
        return None
    if verdict.criteria is None:
        state.event("auto.no_criteria", valid.call, detail="no criteria set; a person decides")
        return None
    return asyncio.create_task(evaluate_call(state, valid, pending, verdict.auto, verdict.criteria))
