"""Standing grants in the workflow: find one that covers a call, and create one from a decision.

Run-scoped grants live in `RunState.standing_grants`; identity-scoped ones live in the
worker's grant store and are reached through activities, only when the run's policy
turns `identity_grants` on (so runs without it schedule no new commands).
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

from durable_tools.workflows._policy import (
    Verdict,
    describe_constraints,
    identity_key,
    make_grant,
    standing_layers,
)
from durable_tools.workflows._policy_types import (
    GRANT_FIND_ACTIVITY,
    GRANT_SAVE_ACTIVITY,
    GrantLookup,
    StandingGrant,
)
from durable_tools.workflows._state import RunState
from durable_tools.workflows._types import ApprovalDecision
from durable_tools.workflows._validate import ValidCall

__all__ = ["grant_from_decision", "standing_verdict"]

_STORE_TIMEOUT = timedelta(seconds=30)


async def standing_verdict(state: RunState, valid: ValidCall) -> Verdict | None:
    """The allowing layers (safe tool, allow list, grants) for a call a person would decide."""
    spec, arguments, policy = valid.spec, valid.arguments, state.policy
    verdict = standing_layers(spec, policy, arguments, state.standing_grants, workflow.now())
    if verdict is not None or not policy.identity_grants:
        return verdict
    grant: StandingGrant | None = await workflow.execute_activity(
        GRANT_FIND_ACTIVITY,
        GrantLookup(
            identity=identity_key(state.input.identity), tool=spec.name, arguments=arguments
        ),
        result_type=StandingGrant | None,  # type: ignore[arg-type]
        start_to_close_timeout=_STORE_TIMEOUT,
        retry_policy=RetryPolicy(maximum_attempts=3),
        summary=f"find a standing grant for {spec.name}",
    )
    if grant is None:
        return None
    return Verdict("allow", f"grant:{grant.grant_id}", f"standing grant by {grant.granted_by}")


async def grant_from_decision(
    state: RunState, valid: ValidCall, decision: ApprovalDecision
) -> StandingGrant | None:
    """Create the standing grant an approving decision asked for (run state or the store)."""
    if decision.grant is None or not decision.approve:
        return None
    grant = make_grant(
        decision.grant,
        grant_id=workflow.uuid4().hex[:12],
        tool=valid.spec.name,
        granted_by=decision.decider,
        now=workflow.now(),
        identity=state.input.identity,
        run_id=workflow.info().workflow_id,
        reason=decision.reason,
    )
    if grant.scope == "run":
        state.standing_grants.append(grant)
    else:
        await workflow.execute_activity(
            GRANT_SAVE_ACTIVITY,
            grant,
            start_to_close_timeout=_STORE_TIMEOUT,
            retry_policy=RetryPolicy(maximum_attempts=5),
            summary=f"save a standing grant for {grant.tool}",
        )
    until = f" until {grant.expires_at.isoformat()}" if grant.expires_at else ""
    state.event(
        "grant.created",
        valid.call,
        detail=f"{grant.grant_id} ({grant.scope}) by {grant.granted_by}{until}: "
        f"{describe_constraints(grant.constraints)}",
    )
    return grant
