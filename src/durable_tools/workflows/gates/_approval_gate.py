"""Stage 2a of a call: the approval gate, the one owner of the approval sequence.

`approve` asks the policy about the call (`rule`, below), acts on the verdict, and for a
call that needs a person waits durably for the decision (`gates/_wait`: the wait, its
events, notifications and metrics), racing auto mode's evaluator when the verdict names
one; a denial becomes a refusal for the model (or ends the run, by policy).

`rule` is the one place a call asks its approval policy, always through the pure `decide`
(`durable_tools.policy`):

1. `decide` from the call alone: the skip switch and the deny list end it here (a denied
   call schedules nothing), and the verdict says what the tool's own rules need;
2. the preflight activity, when the verdict consults the tool's worker-side predicate, the
   tool needs OAuth, or the rules send the call to a person and its summary is rendered on
   the worker;
3. `decide` again under the live policy, with the predicate's answer, the run's standing
   grants (grants it sets aside are reported) and the worker's summary: a verdict that asks
   a person is the request they are shown (who may decide, how many must, the arguments
   hash a decision must carry back, the summary line);
4. when that asks a person, the policy keeps identity-scoped grants and one could stand in:
   the worker's grant store, and `decide` once more with the grant it returned.

Standing grants: run-scoped ones live in `GateState.standing_grants`; identity-scoped ones
live in the worker's grant store and are reached through activities (`find_identity_grant`,
and `grant_from_decision` for an approving decision that asked for one), only when the
run's policy turns `identity_grants` on, the run acts for an identity, and a grant could
stand for the call at all (so runs without them schedule no new commands). Which grant may
stand in for a person is decided by the pure `decide`, also for the store's.

`refit_waiting` is the same question for a call already waiting for a person when
`set_policy` changes the policy: `decide` (with `waiting=`) denies it or names who may
decide it now, and this applies the verdict to the call's request.
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

from durable_tools._activities._types import PREFLIGHT_ACTIVITY, PreflightRequest, PreflightResult
from durable_tools.messages import ToolCall
from durable_tools.policy._decide import Verdict, decide
from durable_tools.policy._grants import (
    UNBOUND,
    ToolBinding,
    describe_constraints,
    identity_key,
    make_grant,
)
from durable_tools.protocol._deciders import may_decide
from durable_tools.protocol._limits import MAX_REASON_CHARS, clip
from durable_tools.protocol._policy_types import (
    GRANT_FIND_ACTIVITY,
    GRANT_SAVE_ACTIVITY,
    GrantLookup,
    StandingGrant,
)
from durable_tools.protocol._records import ToolCallRecord
from durable_tools.protocol._types import RunStatus
from durable_tools.protocol._wait_types import ApprovalDecision, PendingApproval
from durable_tools.tools._spec import ToolSpec
from durable_tools.workflows.gates._policy_auto import evaluate_call
from durable_tools.workflows.gates._wait import (
    answer_of,
    close_wait,
    expire_wait,
    open_wait,
    renew_wait,
    wait_for_answer,
)
from durable_tools.workflows.observe._visibility import evicting
from durable_tools.workflows.run._state import EndRun, RunState
from durable_tools.workflows.run._valid_call import ValidCall
from durable_tools.workflows.run._wait_maps import GateState

__all__ = [
    "GRANTS_CHECKED_PATCH",
    "GRANT_BINDS_TOOL_PATCH",
    "LIVE_DENY_PATCH",
    "PENDING_REFIT_PATCH",
    "Gate",
    "Ruling",
    "approve",
    "find_identity_grant",
    "grant_from_decision",
    "preflight",
    "refit_waiting",
    "rule",
    "scope_key",
]


GRANTS_CHECKED_PATCH = "grants-checked-against-policy"
"""Marks a run that set a covering grant aside (or skipped the grant store) because of the
policy in force. Histories recorded before that check replay with grants allowing as they
did then; `workflow.patched` is asked only where the two would differ."""

PENDING_REFIT_PATCH = "policy-change-refits-pending"
"""Marks a run whose `set_policy` reached calls already waiting for a person. Histories
recorded before then replay with those calls keeping the policy they were asked under."""

GRANT_BINDS_TOOL_PATCH = "grant-binds-tool"
"""Marks a run whose standing grants record the tool's schema and safety digests (and so
cover a call only while the tool is still what the approver saw). Grants made before it
cover by name."""

LIVE_DENY_PATCH = "deny-list-after-preflight"
"""Marks a run where a `set_policy` landing during a call's preflight denied the call. Before,
the call went to a person instead (anyone, no auto mode); asked only where the two differ."""


@dataclass(frozen=True)
class Gate:
    """What the approval gate decided: a refusal for the model, or go on."""

    refusal: str | None = None
    """Set when the call was denied: who denied it and why (the pipeline tells the model)."""
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
    return Gate(refusal=text)


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
        arguments_hash=verdict.arguments_hash,
        deciders=list(verdict.deciders),
        requested_at=now,
        deadline=now + timedelta(seconds=timeout) if timeout else None,
        approvals_required=verdict.approvals_required,
        summary=verdict.summary,
    )
    waits = state.gates.approvals
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
                renew_wait(state, waits, "approval.escalated", pending)
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


@dataclass(frozen=True)
class Ruling:
    """The policy's last word on a call reaching the gate, and what the worker said."""

    verdict: Verdict
    """`allow`, `deny` or `ask` (a person, with who may decide and how many must)."""
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


async def rule(state: RunState, valid: ValidCall) -> Ruling:
    """Ask the policy about a call, fetching what `decide` consults (see the module)."""
    spec = valid.spec
    first = decide(spec, state.gates.policy, valid.arguments, now=workflow.now())
    if first.action == "deny":
        return Ruling(first)
    checked: PreflightResult | None = None
    # A summary function runs on the worker, in the preflight, when a person may be asked.
    if (
        first.rules_ask is None
        or spec.oauth is not None
        or (first.rules_ask and spec.approval_summary_on_worker)
    ):
        checked = await preflight(state, valid, force=False)
    if first.layer == "skip_all":
        return Ruling(first, checked)  # the switch was on when the call reached the gate
    rules_ask = first.rules_ask
    if rules_ask is None:
        assert checked is not None  # the verdict consulted the predicate: the preflight ran
        rules_ask = checked.approval_required
    # Asked again under the live policy: a `set_policy` may have landed during the preflight.
    asked = _Asked(state, valid, checked.summary if checked else None)
    verdict = asked.decide(list(state.gates.standing_grants), rules_ask=rules_ask)
    if verdict.action == "deny" and not workflow.patched(LIVE_DENY_PATCH):
        # Replaying a run from before the fix: the call went to a person (anyone).
        return Ruling(asked.decide([], rules_ask=rules_ask, legacy_live_deny=True), checked)
    return Ruling(await _identity_grant(asked, verdict), checked)


async def _identity_grant(asked: _Asked, verdict: Verdict) -> Verdict:
    """The verdict with the worker's grant store consulted, when the policy keeps
    identity-scoped grants and the call goes to a person."""
    state, valid = asked.state, asked.valid
    if verdict.action != "ask" or not state.gates.policy.identity_grants:
        return verdict
    key = scope_key(state)
    could_stand = key is not None and verdict.approvals_required == 1
    if not could_stand and not _recorded_before_check():
        return verdict
    found = await find_identity_grant(valid, key or "", verdict.grant_makers)
    if found is None:
        return verdict
    # The run's own grants were set aside (and reported) already: only the store's is new.
    return asked.decide([found], rules_ask=True)


def _recorded_before_check() -> bool:
    # False when running live (and then a marker is recorded): only a replayed history
    # from before the check answers True here.
    return not workflow.patched(GRANTS_CHECKED_PATCH)


@dataclass(frozen=True)
class _Asked:
    """A call the gate asks `decide` about under the live policy, once its preflight ran."""

    state: RunState
    valid: ValidCall
    worker_summary: str | None
    """The preflight's summary of the call, for a tool whose summary the worker writes."""

    def decide(
        self, grants: list[StandingGrant], *, rules_ask: bool | None, legacy_live_deny: bool = False
    ) -> Verdict:
        """`decide` with these grants; the grants it sets aside are reported."""
        state, valid = self.state, self.valid
        asked = functools.partial(
            decide,
            valid.spec,
            state.gates.policy,
            valid.arguments,
            now=workflow.now(),
            rules_ask=rules_ask,
            grants=grants,
            worker_summary=self.worker_summary,
            legacy_live_deny=legacy_live_deny,
        )
        verdict = asked()
        if verdict.set_aside and _recorded_before_check():
            return asked(legacy_grants=True)
        for why in verdict.set_aside:
            state.event("grant.set_aside", valid.call, detail=why)
        return verdict


def refit_waiting(state: RunState, approval: PendingApproval) -> None:
    """Hold a call already waiting for a person to the live policy: `decide` denies it, or
    names who may decide it now (approvals from people it no longer names stop counting)."""
    call_id = approval.call_id
    # Only the tool's name is read for a waiting call; a tool the catalog no longer lists
    # is still held to the deny list by it.
    spec = next((s for s in state.catalog.specs if s.name == approval.tool), None)
    verdict = decide(
        spec or ToolSpec(name=approval.tool),
        state.gates.policy,
        approval.arguments,
        now=workflow.now(),
        waiting=approval,
    )
    if verdict.action == "deny":
        state.gates.approvals.answered[call_id] = ApprovalDecision(
            call_id=call_id,
            approve=False,
            decider="policy",
            reason=verdict.detail,
            arguments_hash=approval.arguments_hash,
        )
        state.event("approval.refitted", call_id=call_id, detail="denied by the new policy")
        return
    deciders = list(verdict.deciders)
    if deciders == approval.deciders:
        return
    kept = [name for name in approval.approved_by if may_decide(name, deciders)]
    dropped = [name for name in approval.approved_by if name not in kept]
    approval.deciders, approval.approved_by = deciders, kept
    detail = "deciders " + ", ".join(deciders)
    if dropped:
        detail += f"; approvals no longer counted: {', '.join(dropped)}"
    state.event("approval.refitted", call_id=call_id, detail=clip(detail, MAX_REASON_CHARS))


# --------------------------------------------------------------------- standing grants

_STORE_TIMEOUT = timedelta(seconds=30)


def scope_key(state: RunState) -> str | None:
    """The identity-grant scope of this run (agent + identity), None when it has none."""
    return identity_key(state.config.name, state.input.identity)


async def find_identity_grant(
    valid: ValidCall, key: str, makers: tuple[str, ...]
) -> StandingGrant | None:
    """The worker's grant store's grant for the call in scope `key`, made by one of
    `makers` (empty: anyone), or None. Whether it may stand in is `decide`'s question."""
    binding = ToolBinding.of(valid.spec)
    found: StandingGrant | None = await workflow.execute_activity(
        GRANT_FIND_ACTIVITY,
        GrantLookup(
            identity=key,
            tool=valid.spec.name,
            arguments=valid.arguments,
            makers=makers,
            tool_schema=binding.schema,
            tool_safety=binding.safety,
        ),
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
        # Bound to the tool as the approver saw it; a run recorded before grants bound
        # the tool replays with the name-only grant it made then.
        binding=ToolBinding.of(valid.spec) if workflow.patched(GRANT_BINDS_TOOL_PATCH) else UNBOUND,
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
