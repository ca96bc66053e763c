"""Auto mode in the workflow: an evaluator activity raced against a person.

The evaluation runs while the call is already pending for a person. A confident
`approve` or `deny` becomes the call's decision (decider `auto:<evaluator>`) unless a
person answered first, in which case the evaluation is cancelled. Everything else (an
error, a timeout, an `escalate` verdict, a confidence under the criteria's minimum, a
call that needs two approvals) leaves the call with the person: auto mode never fails open.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, FailureError

from durable_tools.protocol._limits import MAX_REASON_CHARS, clip
from durable_tools.protocol._policy_types import (
    EVALUATE_ACTIVITY,
    AutoApproval,
    CriteriaSet,
    Evaluation,
    EvaluationRequest,
)
from durable_tools.protocol._wait_types import ApprovalDecision, PendingApproval
from durable_tools.workflows.run._state import RunState
from durable_tools.workflows.run._valid_call import ValidCall

__all__ = ["AUTO_FOLLOWS_POLICY_PATCH", "evaluate_call"]

AUTO_FOLLOWS_POLICY_PATCH = "auto-verdict-follows-live-policy"
"""Marks a run whose evaluation's verdict was set aside because the policy changed."""


async def evaluate_call(
    state: RunState,
    valid: ValidCall,
    pending: PendingApproval,
    auto: AutoApproval,
    criteria: CriteriaSet,
) -> None:
    """Run the evaluator and, when it is confident, decide the pending call."""
    call = valid.call
    try:
        evaluation: Evaluation = await workflow.execute_activity(
            EVALUATE_ACTIVITY,
            EvaluationRequest(
                evaluator=auto.evaluator,
                tool=valid.spec.name,
                arguments=pending.arguments,
                criteria=criteria,
                call_id=call.id,
                run_id=workflow.info().workflow_id,
            ),
            result_type=Evaluation,
            start_to_close_timeout=timedelta(seconds=auto.timeout_seconds),
            retry_policy=RetryPolicy(maximum_attempts=1),
            cancellation_type=workflow.ActivityCancellationType.TRY_CANCEL,
            summary=f"evaluate {valid.spec.name} {call.id}",
        )
    except ActivityError as error:
        cause = error.cause
        why = cause.message if isinstance(cause, FailureError) else str(error)
        state.event("auto.failed", call, detail=clip(f"{why}; a person decides", 500))
        return
    detail = (
        f"{evaluation.verdict} (confidence {evaluation.confidence:.2f}, "
        f"{evaluation.latency_ms:.0f} ms): {evaluation.reasoning}"
    )
    state.event("auto.evaluated", call, detail=clip(detail, 1000))
    if call.id in state.gates.approvals.answered or call.id not in state.gates.approvals.pending:
        return  # a person answered while the result was on its way
    if state.gates.policy.auto != auto and workflow.patched(AUTO_FOLLOWS_POLICY_PATCH):
        # A `set_policy` changed or ended auto mode while the evaluation ran: its verdict
        # was asked under a policy no longer in force.
        state.event("auto.escalated", call, detail="auto mode changed; a person decides")
        return
    if evaluation.confidence < criteria.min_confidence:
        state.event(
            "auto.escalated",
            call,
            detail=f"confidence {evaluation.confidence:.2f} is under "
            f"{criteria.min_confidence:.2f}; a person decides",
        )
        return
    if evaluation.verdict == "escalate" or (
        evaluation.verdict == "approve" and pending.approvals_required > 1
    ):
        state.event("auto.escalated", call, detail=f"{evaluation.verdict}; a person decides")
        return
    state.gates.approvals.answered[call.id] = ApprovalDecision(
        call_id=call.id,
        approve=evaluation.verdict == "approve",
        decider=clip(f"auto:{auto.evaluator}", 200),
        reason=clip(evaluation.reasoning, MAX_REASON_CHARS) or None,
        arguments_hash=pending.arguments_hash,
    )
