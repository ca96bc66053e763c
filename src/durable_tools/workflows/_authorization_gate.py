"""Stage 2b of a call: the authorization gate. OAuth access the user must grant.

When the preflight found no usable grant for the tool's provider it returned an
authorization URL: the run waits, durably, for the callback's `authorization_completed`
signal, then runs with the grant reference (never the token).
"""

from __future__ import annotations

from temporalio import workflow

from durable_tools.activities._types import PreflightResult
from durable_tools.messages import Message
from durable_tools.tools import ErrorKind, NeedsAuthorization
from durable_tools.tools._classify import error_message_for_model
from durable_tools.workflows._state import RunState
from durable_tools.workflows._types import (
    AuthorizationCompleted,
    PendingAuthorization,
    ToolCallRecord,
)
from durable_tools.workflows._validate import ValidCall
from durable_tools.workflows._visibility import publish, unless_evicted

__all__ = ["authorize"]


async def authorize(
    state: RunState, valid: ValidCall, record: ToolCallRecord, checked: PreflightResult | None
) -> str | Message | None:
    """The OAuth grant reference to run with (None: the tool needs none), or a refusal.

    When the preflight found no usable grant it returned an authorization URL: the run
    waits, durably, for the callback's `authorization_completed` signal.
    """
    if checked is None or not checked.authorization_url:
        return checked.grant_ref if checked else None
    call, spec = valid.call, valid.spec
    assert spec.oauth is not None
    record.status = "awaiting_authorization"
    state.grants.pop(call.id, None)
    state.authorizations[call.id] = PendingAuthorization(
        call_id=call.id,
        tool=spec.name,
        provider=spec.oauth.provider,
        scopes=list(spec.oauth.scopes),
        authorization_url=checked.authorization_url,
        requested_at=workflow.now(),
    )
    state.event("authorization.requested", call, detail=spec.oauth.provider)
    publish(state)
    try:
        await workflow.wait_condition(
            lambda: call.id in state.grants or state.cancel_reason is not None
        )
        state.check_call_cancelled()
        completed: AuthorizationCompleted = state.grants.pop(call.id)
        state.event(
            "authorization.completed" if completed.grant_ref else "authorization.failed",
            call,
            detail=completed.error,
        )
    finally:
        state.authorizations.pop(call.id, None)
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
