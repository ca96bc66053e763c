"""Which decisions a run accepts, as pure functions: a decision names a call that waits,
comes from one of its deciders, is bound to the arguments shown, and counts each person once.

The workflow's update validators call these (`check_decision`); keeping them pure makes the
rules testable without a server and safe inside the sandbox.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from durable_tools.protocol._deciders import (
    distinct_people,
    impersonates,
    may_decide,
    person_of,
)
from durable_tools.protocol._wait_types import ApprovalDecision, PendingApproval

__all__ = [
    "InvalidDecision",
    "check_decision",
]


class InvalidDecision(ValueError):
    """A decision the run refuses: unknown call, already decided, wrong decider, stale hash."""


def check_decision(
    decision: ApprovalDecision,
    pending: dict[str, PendingApproval],
    decided: Collection[str],
    *,
    hash_required: bool = False,
    identity_grants: bool = False,
    has_identity: bool = True,
    how_decided: Callable[[str], str] | None = None,
) -> PendingApproval:
    """Validate a decision against the run's pending approvals.

    Args:
        decision: The decision received.
        pending: The run's pending approvals, by call id.
        decided: Call ids already decided (and not asked again).
        hash_required: The call id was used by more than one call in the run (or the
            run no longer knows: `CALL_IDS_CARRIED`), so a decision without the
            arguments hash could be meant for another of them.
        identity_grants: The run's policy lets decisions create identity-scoped grants.
        has_identity: The run acts for an identity (a tenant or a user), which an
            identity-scoped grant is kept under.
        how_decided: Says how a decided call was decided (`approved by alice at ...`),
            for the refusal of a second decision; asked only then.

    Returns:
        The pending approval the decision answers.

    Raises:
        InvalidDecision: naming what is wrong.
    """
    if decision.call_id in decided:
        how = how_decided(decision.call_id) if how_decided is not None else ""
        # "already approved by alice at ...": the words the client's own check uses, so a
        # person refused here or there reads the same thing.
        raise InvalidDecision(f"tool call {decision.call_id!r} was already {how or 'decided'}")
    approval = pending.get(decision.call_id)
    if approval is None:
        waiting = ", ".join(sorted(pending)) or "none"
        raise InvalidDecision(
            f"no approval is pending for tool call {decision.call_id!r} (pending: {waiting})"
        )
    false_name = impersonates(decision.decider)
    if false_name is not None:
        raise InvalidDecision(f"{decision.decider!r} may not decide: {false_name}")
    if not may_decide(decision.decider, approval.deciders):
        raise InvalidDecision(
            f"{decision.decider!r} may not decide tool call {decision.call_id!r}; "
            f"allowed: {', '.join(approval.deciders)}"
        )
    if decision.arguments_hash is None and hash_required:
        raise InvalidDecision(
            f"tool call id {decision.call_id!r} was (or, in a long run, may have been) used "
            "by more than one call in this run: "
            "the decision must carry the arguments hash of the request it answers "
            "(`durable-tools pending` and `show` print it)"
        )
    if decision.arguments_hash is not None and decision.arguments_hash != approval.arguments_hash:
        raise InvalidDecision(
            f"arguments hash does not match tool call {decision.call_id!r}: the decision was "
            "made on different arguments than the ones pending"
        )
    if decision.approve and person_of(decision.decider) in distinct_people(approval.approved_by):
        raise InvalidDecision(
            f"{decision.decider!r} already approved tool call {decision.call_id!r} (however "
            "the name is written, or whichever group it acts through): it needs "
            f"{approval.approvals_required} approvals from distinct people"
        )
    if decision.grant is not None:
        if not decision.approve:
            raise InvalidDecision("a standing grant can only come with an approval")
        if decision.grant.scope == "identity" and not identity_grants:
            raise InvalidDecision(
                "this run's approval policy does not keep identity-scoped grants "
                "(identity_grants is off); grant for the run instead"
            )
        if decision.grant.scope == "identity" and not has_identity:
            raise InvalidDecision(
                "this run acts for no identity (no tenant or user), so an identity-scoped "
                "grant would have nobody to belong to; grant for the run instead"
            )
        if approval.approvals_required > 1:
            raise InvalidDecision(
                f"tool call {decision.call_id!r} needs {approval.approvals_required} "
                "approvals: a standing grant would let one person approve its calls alone"
            )
    return approval
