"""Standing grants in the workflow: the run's scope, the grant store's lookup, and the grants
approving decisions create.

Run-scoped grants live in `GateState.standing_grants`; identity-scoped ones live in the
worker's grant store and are reached through activities, only when the run's policy
turns `identity_grants` on, the run acts for an identity, and a grant could stand for the
call at all (so runs without them schedule no new commands: `_approval_gate` asks). Which
grant may stand in for a person is decided by the pure `decide`, also for the store's.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

from durable_tools.policy._grants import describe_constraints, identity_key, make_grant
from durable_tools.protocol._policy_types import (
    GRANT_FIND_ACTIVITY,
    GRANT_SAVE_ACTIVITY,
    GrantLookup,
    StandingGrant,
)
from durable_tools.protocol._wait_types import ApprovalDecision
from durable_tools.workflows.run._state import RunState
from durable_tools.workflows.run._valid_call import ValidCall

__all__ = ["find_identity_grant", "grant_from_decision", "scope_key"]

_STORE_TIMEOUT = timedelta(seconds=30)


def scope_key(state: RunState) -> str | None:
    """The identity-grant scope of this run (agent + identity), None when it has none."""
    return identity_key(state.config.name, state.input.identity)


async def find_identity_grant(
    valid: ValidCall, key: str, makers: tuple[str, ...]
) -> StandingGrant | None:
    """The worker's grant store's grant for the call in scope `key`, made by one of
    `makers` (empty: anyone), or None. Whether it may stand in is `decide`'s question."""
    found: StandingGrant | None = await workflow.execute_activity(
        GRANT_FIND_ACTIVITY,
        GrantLookup(identity=key, tool=valid.spec.name, arguments=valid.arguments, makers=makers),
        result_type=StandingGrant | None,  # type: ignore[arg-type]
        start_to_close_timeout=_STORE_TIMEOUT,
        retry_policy=RetryPolicy(maximum_attempts=3),
        summary=f"find a standing grant for {valid.spec.name}",
    )
    return found


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
        scope_key=scope_key(state) or "",
        run_id=workflow.info().workflow_id,
        reason=decision.reason,
    )
    if grant.scope == "run":
        state.gates.standing_grants.append(grant)
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
