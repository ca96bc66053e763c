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

import builtins
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ApplicationError

from durable_tools._activities._types import PreflightResult
from durable_tools.messages import Message
from durable_tools.tools import ErrorKind, NeedsAuthorization
from durable_tools.tools._classify import error_message_for_model
from durable_tools.workflows._approval_gate import preflight
from durable_tools.workflows._limits import MAX_CALL_ID_CHARS
from durable_tools.workflows._notify import notify_authorization
from durable_tools.workflows._state import EndRun, RunState
from durable_tools.workflows._types import (
    AuthorizationCompleted,
    PendingAuthorization,
    RunStatus,
    ToolCallRecord,
)
from durable_tools.workflows._validate import ValidCall
from durable_tools.workflows._visibility import publish, unless_evicted

__all__ = ["authorize", "check_reissue", "reissue"]


def _deadline_of(state: RunState) -> timedelta | None:
    timeout = state.config.authorization.timeout_seconds
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
    wait = _deadline_of(state)
    record.status = "awaiting_authorization"
    state.grants.pop(call.id, None)
    state.reissue.discard(call.id)
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
    state.authorizations[call.id] = pending
    state.event("authorization.requested", call, detail=spec.oauth.provider)
    notify_authorization(state, "authorization.requested", pending)
    publish(state)
    automatic = 0
    try:
        while True:
            timeout = None
            if pending.deadline is not None:
                timeout = max(pending.deadline - workflow.now(), timedelta(seconds=1))
            try:
                await workflow.wait_condition(
                    lambda: (
                        call.id in state.grants
                        or call.id in state.reissue
                        or state.cancel_reason is not None
                    ),
                    timeout=timeout,
                )
            except builtins.TimeoutError:
                state.event("authorization.expired", call, detail=f"link {pending.issued}")
                notify_authorization(state, "authorization.expired", pending)
                if policy.on_timeout == "fail":
                    raise EndRun(
                        RunStatus.FAILED,
                        f"authorization of tool call {call.id} ({spec.name}) at "
                        f"{pending.provider} passed its deadline",
                    ) from None
                if policy.on_timeout == "reissue" and automatic < policy.max_reissues:
                    automatic += 1
                    state.reissue.add(call.id)
                else:
                    state.grants[call.id] = AuthorizationCompleted(
                        call_id=call.id, error="no authorization before the deadline"
                    )
            state.check_call_cancelled()
            if call.id in state.grants:
                break
            state.reissue.discard(call.id)
            pending = await _reissue(state, valid, pending, wait)
        completed: AuthorizationCompleted = state.grants.pop(call.id)
        state.event(
            "authorization.completed" if completed.grant_ref else "authorization.failed",
            call,
            detail=completed.error,
        )
    finally:
        state.authorizations.pop(call.id, None)
        state.reissue.discard(call.id)
        unless_evicted(lambda: publish(state))
    if completed.error or not completed.grant_ref:
        record.status = "failed"
        record.error_kind = ErrorKind.UNAUTHORIZED.value
        record.result = f"authorization failed: {completed.error}"[:300]
        refused = NeedsAuthorization(f"authorization failed: {completed.error}")
        return Message.tool(
            call.id, spec.name, error_message_for_model(call.id, spec.name, refused)
        )
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
    if valid.call.id in state.authorizations:
        state.authorizations[valid.call.id] = renewed
    state.event("authorization.reissued", valid.call, detail=f"link {renewed.issued}")
    notify_authorization(state, "authorization.requested", renewed)
    publish(state)
    return renewed


def check_reissue(state: RunState, call_id: object) -> None:
    """The `reissue_authorization` update's validator: a pending authorization of that call.

    Raises:
        ValueError: the request names no pending authorization (rejected before history).
    """
    if not isinstance(call_id, str) or not call_id or len(call_id) > MAX_CALL_ID_CHARS:
        raise ValueError(f"a call id must be text of at most {MAX_CALL_ID_CHARS} characters")
    if call_id not in state.authorizations:
        raise ValueError(f"no authorization is pending for call {call_id[:100]!r}")


async def reissue(state: RunState, call_id: str) -> PendingAuthorization:
    """Ask the gate waiting on `call_id` for a fresh link; returns the renewed wait.

    Raises:
        ApplicationError: the wait ended (granted, failed, cancelled) before a new link
            was issued; the update fails, the run does not.
    """
    before = state.authorizations[call_id].issued
    state.reissue.add(call_id)

    def renewed() -> bool:
        current = state.authorizations.get(call_id)
        return current is None or current.issued != before

    await workflow.wait_condition(renewed)
    current = state.authorizations.get(call_id)
    if current is None:
        raise ApplicationError(f"the authorization of call {call_id} ended before a new link")
    return current
