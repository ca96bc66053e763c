"""Stage 2b of a call: the authorization gate. OAuth access the user must grant.

When the preflight found no usable grant for the tool's provider it returned an
authorization URL: the run waits, durably, for the callback's `authorization_completed`
signal, then runs with the grant reference (never the token).

The wait has a deadline and a policy (`AgentConfig.authorization`): at the deadline the
model is told the authorization did not happen, the run fails, or a fresh link is issued
and the wait starts again. A person can also ask for a fresh link at any time (the
`reissue_authorization` update, `durable-tools auth reissue RUN CALL`): the link of an
OAuth state lives only minutes, a run may wait for days.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ApplicationError

from durable_tools._activities._types import PreflightResult
from durable_tools.messages import Message
from durable_tools.protocol._records import ToolCallRecord
from durable_tools.protocol._types import AgentConfig, RunStatus
from durable_tools.protocol._wait_types import AuthorizationCompleted, PendingAuthorization
from durable_tools.tools import ErrorKind
from durable_tools.workflows.gates._approval_gate import preflight
from durable_tools.workflows.gates._wait import (
    answer_of,
    check_call_id,
    close_wait,
    expire_wait,
    open_wait,
    wait_for_answer,
    waiting_call,
)
from durable_tools.workflows.observe._notify import notify_authorization
from durable_tools.workflows.observe._visibility import publish
from durable_tools.workflows.run._replies import unauthorized_reply
from durable_tools.workflows.run._state import EndRun, RunState
from durable_tools.workflows.run._valid_call import ValidCall
from durable_tools.workflows.run._wait_maps import GateState

__all__ = ["accept_authorization", "authorize", "check_reissue", "reissue"]


def _deadline_of(config: AgentConfig) -> timedelta | None:
    timeout = config.authorization.timeout_seconds
    return timedelta(seconds=timeout) if timeout else None


async def authorize(
    state: RunState, valid: ValidCall, record: ToolCallRecord, checked: PreflightResult | None
) -> str | Message | None:
    """The OAuth grant reference to run with (None: the tool needs none), or a refusal.

    When the preflight found no usable grant it returned an authorization URL: the run
    waits, durably, for the callback's `authorization_completed` signal, a deadline, or a
    request for a fresh link.
    """
    if checked is None or not checked.authorization_url:
        return checked.grant_ref if checked else None
    call, spec = valid.call, valid.spec
    assert spec.oauth is not None
    policy = state.config.authorization
    wait = _deadline_of(state.config)
    record.status = "awaiting_authorization"
    waits = state.gates.authorizations
    state.gates.reissue.discard(call.id)
    now = workflow.now()
    pending = PendingAuthorization(
        call_id=call.id,
        tool=spec.name,
        provider=spec.oauth.provider,
        scopes=list(spec.oauth.scopes),
        authorization_url=checked.authorization_url,
        requested_at=now,
        expires_at=checked.authorization_expires_at,
        deadline=now + wait if wait else None,
    )
    open_wait(state, waits, call, pending, detail=spec.oauth.provider)
    automatic = 0
    try:
        while True:
            timeout = None
            if pending.deadline is not None:
                timeout = max(pending.deadline - workflow.now(), timedelta(seconds=1))
            woken = await wait_for_answer(
                state, waits, call.id, timeout, wake=lambda: call.id in state.gates.reissue
            )
            if not woken:
                expire_wait(state, waits, call, pending, detail=f"link {pending.issued}")
                if policy.on_timeout == "fail":
                    raise EndRun(
                        RunStatus.FAILED,
                        f"authorization of tool call {call.id} ({spec.name}) at "
                        f"{pending.provider} passed its deadline",
                    )
                if policy.on_timeout == "reissue" and automatic < policy.max_reissues:
                    automatic += 1
                    state.gates.reissue.add(call.id)
                else:
                    waits.answered[call.id] = AuthorizationCompleted(
                        call_id=call.id, error="no authorization before the deadline"
                    )
            completed = answer_of(state, waits, call.id, take=True)
            if completed is not None:
                break
            state.gates.reissue.discard(call.id)
            pending = await _reissue(state, valid, pending, wait)
        state.event(
            "authorization.completed" if completed.grant_ref else "authorization.failed",
            call,
            detail=completed.error,
        )
    finally:
        state.gates.reissue.discard(call.id)
        close_wait(state, waits, call.id)
    if completed.error or not completed.grant_ref:
        record.status = "failed"
        record.error_kind = ErrorKind.UNAUTHORIZED.value
        record.result = f"authorization failed: {completed.error}"[:300]
        return unauthorized_reply(call.id, spec.name, completed.error)
    return completed.grant_ref


async def _reissue(
    state: RunState, valid: ValidCall, pending: PendingAuthorization, wait: timedelta | None
) -> PendingAuthorization:
    """A fresh link (a new OAuth state) for the call, and a new deadline."""
    fresh = await preflight(state, valid, force=True)
    now = workflow.now()
    renewed = pending.model_copy(
        update={
            "authorization_url": fresh.authorization_url or pending.authorization_url,
            "expires_at": fresh.authorization_expires_at,
            "deadline": now + wait if wait else None,
            "issued": pending.issued + 1,
        }
    )
    if valid.call.id in state.gates.authorizations.pending:
        state.gates.authorizations.pending[valid.call.id] = renewed
    state.event("authorization.reissued", valid.call, detail=f"link {renewed.issued}")
    notify_authorization(state, "authorization.requested", renewed)
    publish(state)
    return renewed


def accept_authorization(state: RunState, completed: object) -> None:
    """The OAuth callback's signal: the authorization (or its failure) of a waiting call,
    taken by the call's gate when it wakes; anything else is an ignored event. Never raises."""
    if not isinstance(completed, AuthorizationCompleted):
        state.event("authorization.ignored", detail="the signal carried no authorization")
        return
    if completed.call_id not in state.gates.authorizations.pending:
        state.event(
            "authorization.ignored",
            call_id=completed.call_id,
            detail="no authorization pending for this call",
        )
        return
    state.gates.authorizations.answered[completed.call_id] = completed


def check_reissue(gates: GateState, call_id: object) -> None:
    """The `reissue_authorization` update's validator: a pending authorization of that call.

    Raises:
        ValueError: the request names no pending authorization (rejected before history).
    """
    checked = check_call_id(call_id)
    if waiting_call(gates.authorizations, checked) is None:
        raise ValueError(f"no authorization is pending for call {checked[:100]!r}")


async def reissue(gates: GateState, call_id: str) -> PendingAuthorization:
    """Ask the gate waiting on `call_id` for a fresh link; returns the renewed wait.

    Raises:
        ApplicationError: the wait ended (granted, failed, cancelled) before a new link
            was issued; the update fails, the run does not.
    """
    before = gates.authorizations.pending[call_id].issued
    gates.reissue.add(call_id)

    def renewed() -> bool:
        current = gates.authorizations.pending.get(call_id)
        return current is None or current.issued != before

    await workflow.wait_condition(renewed)
    current = gates.authorizations.pending.get(call_id)
    if current is None:
        raise ApplicationError(f"the authorization of call {call_id} ended before a new link")
    return current
