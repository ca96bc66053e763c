"""The policy's verdict on a call in the workflow, and standing grants created by decisions.

Run-scoped grants live in `RunState.standing_grants`; identity-scoped ones live in the
worker's grant store and are reached through activities, only when the run's policy
turns `identity_grants` on, the run acts for an identity, and a grant could stand for the
call at all (so runs without them schedule no new commands). Which grant may stand in for
a person is decided by the pure `decide`, also for the grant the store returns.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

from durable_tools.protocol._policy import (
    Verdict,
    decide,
    describe_constraints,
    grant_makers,
    identity_key,
    make_grant,
    quorum_for,
)
from durable_tools.protocol._policy_types import (
    GRANT_FIND_ACTIVITY,
    GRANT_SAVE_ACTIVITY,
    GrantLookup,
    StandingGrant,
)
from durable_tools.protocol._wait_types import ApprovalDecision
from durable_tools.workflows.run._state import RunState
from durable_tools.workflows.run._valid_call import ValidCall

__all__ = ["GRANTS_CHECKED_PATCH", "grant_from_decision", "policy_verdict", "scope_key"]

_STORE_TIMEOUT = timedelta(seconds=30)

GRANTS_CHECKED_PATCH = "grants-checked-against-policy"
"""Marks a run that set a covering grant aside (or skipped the grant store) because of the
policy in force. Histories recorded before that check replay with grants allowing as they
did then; `workflow.patched` is asked only where the two would differ."""


def scope_key(state: RunState) -> str | None:
    """The identity-grant scope of this run (agent + identity), None when it has none."""
    return identity_key(state.config.name, state.input.identity)


def _recorded_before_check() -> bool:
    # False when running live (and then a marker is recorded): only a replayed history
    # from before the check answers True here.
    return not workflow.patched(GRANTS_CHECKED_PATCH)


async def policy_verdict(state: RunState, valid: ValidCall, *, rules_ask: bool) -> Verdict:
    """The policy's verdict on a call: `decide` over the run's grants, then the store's."""
    spec, arguments, policy = valid.spec, valid.arguments, state.policy
    verdict = _decide(state, valid, list(state.standing_grants), rules_ask=rules_ask)
    if verdict.action != "ask" or not policy.identity_grants:
        return verdict
    key = scope_key(state)
    could_stand = key is not None and quorum_for(spec, policy) == 1
    if not could_stand and not _recorded_before_check():
        return verdict
    found: StandingGrant | None = await workflow.execute_activity(
        GRANT_FIND_ACTIVITY,
        GrantLookup(
            identity=key or "", tool=spec.name, arguments=arguments, makers=grant_makers(policy)
        ),
        result_type=StandingGrant | None,  # type: ignore[arg-type]
        start_to_close_timeout=_STORE_TIMEOUT,
        retry_policy=RetryPolicy(maximum_attempts=3),
        summary=f"find a standing grant for {spec.name}",
    )
    if found is None:
        return verdict
    # The run's own grants were set aside (and reported) already: only the store's is new.
    return _decide(state, valid, [found], rules_ask=True)


def _decide(
    state: RunState, valid: ValidCall, grants: list[StandingGrant], *, rules_ask: bool
) -> Verdict:
    args = (valid.spec, state.policy, valid.arguments)
    now = workflow.now()
    verdict = decide(*args, rules_ask=rules_ask, grants=grants, now=now)
    if verdict.set_aside and _recorded_before_check():
        return decide(*args, rules_ask=rules_ask, grants=grants, now=now, legacy_grants=True)
    for why in verdict.set_aside:
        state.event("grant.set_aside", valid.call, detail=why)
    return verdict


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
