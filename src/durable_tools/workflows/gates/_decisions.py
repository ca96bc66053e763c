"""What the run's decision handlers do: check a decision, then apply it to the `RunState`.

The workflow's updates and signals (`decide`, `decision`, `decide_batch`, `set_policy`,
`revoke_grant`) are one line each over these functions. Checks raise `InvalidDecision`
(an update's validator turns that into a rejection that never enters history); nothing
here raises anything else for any input, so no caller can wedge a run through them.
"""

from __future__ import annotations

from temporalio import workflow

from durable_tools.policy._decisions import InvalidDecision, check_decision
from durable_tools.protocol._limits import (
    MAX_REASON_CHARS,
    PAYLOAD_BUDGET_BYTES,
    clip,
    payload_bytes,
)
from durable_tools.protocol._policy_types import BatchDecision, GrantRevocation, PolicyChange
from durable_tools.protocol._wait_types import ApprovalDecision
from durable_tools.workflows.gates._approval_gate import (
    PENDING_REFIT_PATCH,
    refit_waiting,
    scope_key,
)
from durable_tools.workflows.observe._visibility import publish
from durable_tools.workflows.run._run_calls import RunCalls
from durable_tools.workflows.run._state import RunState
from durable_tools.workflows.run._wait_maps import GateState

__all__ = [
    "apply_policy_change",
    "apply_revocation",
    "batch_decisions",
    "check_batch",
    "check_decision_of",
    "check_policy_change",
    "check_revocation",
    "end_approvals",
    "forget_decision",
    "record_decision",
    "withdraw_undecided",
]


def check_decision_of(state: RunState, decision: object) -> None:
    """Refuse anything but a valid decision on a call pending in this run."""
    if not isinstance(decision, ApprovalDecision):
        raise InvalidDecision(
            f"a decision must be an ApprovalDecision, got {type(decision).__name__}"
        )
    check_decision(
        decision,
        state.gates.approvals.pending,
        state.gates.approvals.answered.keys(),
        hash_required=state.calls.ids_dropped or state.calls.uses.get(decision.call_id, 0) > 1,
        identity_grants=state.gates.policy.identity_grants,
        has_identity=scope_key(state) is not None,
        how_decided=lambda call_id: _how_decided(
            state.calls, call_id, state.gates.approvals.answered[call_id]
        ),
    )


def _how_decided(calls: RunCalls, call_id: str, decision: ApprovalDecision) -> str:
    """`approved by alice at 2026-...`: what a second decider is told."""
    verdict = "approved" if decision.approve else "denied"
    record = calls.records.get(call_id)
    when = record.decided_at if record is not None else None
    return f"{verdict} by {decision.decider}" + (f" at {when.isoformat()}" if when else "")


def record_decision(state: RunState, decision: ApprovalDecision) -> str:
    """Apply a checked decision; returns the verdict the decider is told."""
    verdict = "approved" if decision.approve else "denied"
    detail = f"{verdict} by {decision.decider}" + (
        f": {decision.reason}" if decision.reason else ""
    )
    pending = state.gates.approvals.pending.get(decision.call_id)
    if decision.approve and pending is not None and pending.approvals_required > 1:
        # Two-person rule: approvals from distinct deciders add up; any denial denies.
        pending.approved_by.append(decision.decider)
        count, needed = len(pending.approved_by), pending.approvals_required
        if count < needed:
            state.event(
                "approval.partial",
                tool=pending.tool,
                call_id=decision.call_id,
                detail=f"{detail} ({count} of {needed})",
            )
            return f"approved ({count} of {needed})"
        decision = decision.model_copy(update={"decider": "+".join(pending.approved_by)})
        detail = f"approved by {decision.decider}" + (
            f": {decision.reason}" if decision.reason else ""
        )
    state.gates.approvals.answered[decision.call_id] = decision
    tool = pending.tool if pending is not None else None
    state.event("approval.decided", tool=tool, call_id=decision.call_id, detail=detail)
    return verdict


def withdraw_undecided(gates: GateState) -> None:
    """A steer skipped the turn's remaining calls: withdraw every approval still pending,
    so that a decision arriving after it finds nothing to decide."""
    approvals = gates.approvals
    for call_id in [c for c in approvals.pending if c not in approvals.answered]:
        del approvals.pending[call_id]


def forget_decision(gates: GateState, call_id: str) -> None:
    """Drop the decision of a finished call (an embedded runtime keeps no turn's worth)."""
    gates.approvals.answered.pop(call_id, None)


def end_approvals(gates: GateState) -> None:
    """The run ended: nothing waits for a person or an authorization any more (the final
    status and search attributes show none)."""
    gates.approvals.pending.clear()
    gates.authorizations.pending.clear()


def batch_decisions(batch: BatchDecision) -> list[ApprovalDecision]:
    """One decision per item of a batch, each bound to its own arguments hash."""
    return [
        ApprovalDecision(
            call_id=item.call_id,
            approve=item.approve,
            decider=batch.decider,
            reason=batch.reason,
            arguments_hash=item.arguments_hash,
        )
        for item in batch.items
    ]


def check_batch(state: RunState, batch: object) -> None:
    """Check every item of a batch before any applies: one bad item rejects them all."""
    if not isinstance(batch, BatchDecision):
        raise InvalidDecision(f"a batch must be a BatchDecision, got {type(batch).__name__}")
    seen: set[str] = set()
    for decision in batch_decisions(batch):
        if decision.call_id in seen:
            raise InvalidDecision(f"tool call {decision.call_id!r} appears twice in the batch")
        seen.add(decision.call_id)
        check_decision_of(state, decision)


def check_policy_change(change: object) -> None:
    """Refuse anything but a `PolicyChange` small enough to carry."""
    if not isinstance(change, PolicyChange):
        raise InvalidDecision(
            f"a policy change must be a PolicyChange, got {type(change).__name__}"
        )
    if payload_bytes(change) > PAYLOAD_BUDGET_BYTES // 16:
        raise InvalidDecision("the policy is too large")


def apply_policy_change(state: RunState, change: PolicyChange) -> str:
    """Make `change.policy` the live policy, its deny list and deciders also for calls
    already waiting for a person (`refit_waiting`); audited in the run's events."""
    state.gates.policy = change.policy
    detail = f"by {change.changed_by}" + (f": {change.reason}" if change.reason else "")
    state.event("policy.changed", detail=clip(detail, MAX_REASON_CHARS))
    if state.gates.approvals.pending and workflow.patched(PENDING_REFIT_PATCH):
        for approval in list(state.gates.approvals.pending.values()):
            refit_waiting(state, approval)
    publish(state)  # the UI's current details show the live policy
    return "policy changed"


def check_revocation(gates: GateState, revocation: object) -> None:
    """Refuse a revocation of a grant the run does not hold (or no longer holds)."""
    if not isinstance(revocation, GrantRevocation):
        raise InvalidDecision(
            f"a revocation must be a GrantRevocation, got {type(revocation).__name__}"
        )
    live = [g.grant_id for g in gates.standing_grants if g.revoked_at is None]
    if revocation.grant_id not in live:
        raise InvalidDecision(
            f"no live run-scoped grant {revocation.grant_id!r} (live: {', '.join(live) or 'none'})"
        )


def apply_revocation(state: RunState, revocation: GrantRevocation) -> str:
    """Revoke a run-scoped standing grant: its tool's calls are asked again."""
    for index, grant in enumerate(state.gates.standing_grants):
        if grant.grant_id == revocation.grant_id:
            state.gates.standing_grants[index] = grant.model_copy(
                update={"revoked_at": workflow.now(), "revoked_by": revocation.revoked_by}
            )
    state.event("grant.revoked", detail=f"{revocation.grant_id} by {revocation.revoked_by}")
    return "revoked"
