"""Stage 2a of a call: the approval gate. The layered policy, then a person's decision.

`approve` decides whether the call needs a person (from the tool, the run's live policy
and its layers, or a worker-side predicate through the preflight activity) and waits
durably for the decision, racing auto mode's evaluator when the policy has one; a denial
becomes a refusal message for the model (or ends the run, by policy).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import timedelta

from temporalio import workflow

from durable_tools._activities._types import PREFLIGHT_ACTIVITY, PreflightRequest, PreflightResult
from durable_tools.messages import Message, ToolCall
from durable_tools.protocol._approvals import arguments_hash, static_approval
from durable_tools.protocol._policy import Verdict, criteria_for, screen
from durable_tools.protocol._records import ToolCallRecord
from durable_tools.protocol._types import RunStatus
from durable_tools.protocol._wait_types import ApprovalDecision, PendingApproval
from durable_tools.tools._approval_summary import call_summary
from durable_tools.tools._formatting import redact_arguments
from durable_tools.workflows.gates._decisions import PENDING_REFIT_PATCH
from durable_tools.workflows.gates._grants import grant_from_decision, policy_verdict
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
from durable_tools.workflows.observe._visibility import publish, unless_evicted
from durable_tools.workflows.run._replies import denied_reply
from durable_tools.workflows.run._state import EndRun, RunState
from durable_tools.workflows.run._valid_call import ValidCall

__all__ = ["Gate", "approve", "preflight"]


@dataclass(frozen=True)
class Gate:
    """What the approval gate decided: a refusal for the model, or go on."""

    refusal: Message | None = None
    """Set when the call was denied: the message the model gets instead of a result."""
    preflight: PreflightResult | None = None
    """The preflight's answer, when one ran (OAuth grant or authorization URL)."""


async def preflight(state: RunState, valid: ValidCall, *, force: bool) -> PreflightResult:
    """Ask the worker whether the call needs approval (predicates) and has its OAuth grant."""
    result: PreflightResult = await workflow.execute_activity(
        PREFLIGHT_ACTIVITY,
        PreflightRequest(
            call_id=valid.call.id,
            tool_name=valid.spec.name,
            arguments=valid.arguments,
            workflow_id=workflow.info().workflow_id,
            handler_prefix=state.handler_prefix,
            identity=state.input.identity,
            force_reauthorization=force,
        ),
        result_type=PreflightResult,
        start_to_close_timeout=timedelta(seconds=30),
        summary=f"preflight {valid.spec.name} {valid.call.id}",
    )
    return result


async def approve(state: RunState, valid: ValidCall, record: ToolCallRecord) -> Gate:
    """Run the approval gate: no approval needed, approved, or denied (a refusal).

    The layers of the run's live policy decide in order (`_policy`): skip switch, deny
    list, the tool's and run's own rules, safe tools, allow list, standing grants, auto
    mode, then a person. The layer that decided is kept on the call's record.
    """
    spec = valid.spec
    screened = screen(spec, state.policy)
    if screened is not None and screened.action == "deny":
        record.policy_layer = screened.layer
        state.event("policy.denied", valid.call, detail=screened.detail)
        return _refuse(state, valid, record, f"denied by policy ({screened.layer})")
    rules_ask = False if screened is not None else static_approval(spec, state.policy)
    checked: PreflightResult | None = None
    # A summary function runs on the worker, in the preflight, when a person may be asked.
    if (
        rules_ask is None
        or spec.oauth is not None
        or (rules_ask and spec.approval_summary_on_worker)
    ):
        checked = await preflight(state, valid, force=False)
        if rules_ask is None:
            rules_ask = checked.approval_required
    verdict = screened or await policy_verdict(state, valid, rules_ask=rules_ask)
    if verdict.action == "allow":
        if verdict.layer != "rules":
            record.policy_layer = verdict.layer
            detail = verdict.detail if screened else f"{verdict.layer}: {verdict.detail}"
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
    return _refuse(state, valid, record, text)


def _refuse(state: RunState, valid: ValidCall, record: ToolCallRecord, text: str) -> Gate:
    spec, call = valid.spec, valid.call
    record.status = "denied"
    record.result = text[:300]
    if state.policy.on_deny == "end_run":
        raise EndRun(RunStatus.FAILED, f"tool call {call.id} ({spec.name}) {text}")
    return Gate(refusal=denied_reply(call.id, spec.name, text))


async def _await_decision(
    state: RunState, valid: ValidCall, verdict: Verdict, checked: PreflightResult | None
) -> ApprovalDecision:
    call, spec = valid.call, valid.spec
    policy = state.policy
    now = workflow.now()
    timeout = policy.timeout_seconds
    pending = PendingApproval(
        call_id=call.id,
        tool=spec.name,
        arguments=redact_arguments(valid.arguments, spec.safety.redact),
        arguments_hash=arguments_hash(valid.arguments),
        deciders=list(verdict.deciders),
        requested_at=now,
        deadline=now + timedelta(seconds=timeout) if timeout else None,
        approvals_required=verdict.approvals_required,
        summary=call_summary(spec, valid.arguments, checked.summary if checked else None),
    )
    waits = state.approvals
    approval_requested(spec.name)
    open_wait(state, waits, call, pending, detail=f"hash {pending.arguments_hash[:12]}")
    evaluation = _start_evaluation(state, valid, pending)
    try:
        shown = (
            f"approval deadline: {pending.summary} ({spec.name})"
            if pending.summary
            else f"approval deadline: {spec.name} {call.id}"
        )
        while not await wait_for_answer(state, waits, call.id, timeout, summary=shown):
            if state.policy is not policy and workflow.patched(PENDING_REFIT_PATCH):
                policy = state.policy  # changed while the call waited: it rules now
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
        if evaluation is not None and not evaluation.done():
            # A person answered first: the evaluation is no longer wanted.
            unless_evicted(lambda: _cancel(state, call, evaluation))
        close_wait(state, waits, call.id)


def _cancel(state: RunState, call: ToolCall, task: asyncio.Task[None]) -> None:
    why = "a person decided first" if call.id in state.decisions else "the approval ended"
    state.event("auto.cancelled", call, detail=why)
    task.cancel()


def _start_evaluation(
    state: RunState, valid: ValidCall, pending: PendingApproval
) -> asyncio.Task[None] | None:
    """Start auto mode's evaluator, racing the person; None when auto mode is off or the
    tool has no criteria set (then the person alone decides)."""
    auto = state.policy.auto
    if auto is None:
        return None
    criteria = criteria_for(state.policy, valid.spec.name)
    if criteria is None:
        state.event("auto.no_criteria", valid.call, detail="no criteria set; a person decides")
        return None
    return asyncio.create_task(evaluate_call(state, valid, pending, auto, criteria))
