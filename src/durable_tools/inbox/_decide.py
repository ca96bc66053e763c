"""Deciding a pending call as an authenticated user, bound to the arguments they saw."""

from __future__ import annotations

import asyncio
import re

from temporalio.client import (
    WorkflowQueryFailedError,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.service import RPCError

from durable_tools._callers._auth import decider_for
from durable_tools._callers._tokens import User
from durable_tools._encrypted import ENCRYPTED_NOTE, is_encrypted_payload_error
from durable_tools.client import DurableTools
from durable_tools.protocol._limits import MAX_CALL_ID_CHARS, MAX_REASON_CHARS
from durable_tools.protocol._policy_types import GrantRequest
from durable_tools.workflows import AgentWorkflow, ApprovalDecision, PendingAuthorization

from ._pending import QUERY_TIMEOUT

__all__ = ["DECIDE_TIMEOUT", "DecisionRefused", "decide", "reissue"]

DECIDE_TIMEOUT = 30.0
"""Seconds a decision may wait for the run's worker to take it."""

_HASH = re.compile(r"[0-9a-f]{64}")


class DecisionRefused(Exception):
    """The inbox or the run refused a decision; `status` is the HTTP status to answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


async def decide(
    tools: DurableTools,
    run_id: str,
    call_id: str,
    user: User,
    *,
    approve: bool,
    arguments_hash: object,
    reason: object = None,
    remember: bool = False,
) -> str:
    """Send `user`'s decision on a call pending in run `run_id`; returns the run's verdict.

    The decision always carries the arguments hash the user was shown (required): if the
    call pending under `call_id` changed since, nothing is decided. The decider recorded
    is the authenticated user (`alice`, or `alice via group:ops` when a group named in the
    deciders lets them decide). `remember` approves and stops asking: a standing grant for
    this tool for the rest of the run (the run's policy layers still apply first).

    Raises:
        DecisionRefused: a malformed request (400), a user who may not decide (403), no
            such pending call (404), a changed call or a rejection by the run (409), no
            worker answering or a run whose payloads this inbox has no keys for (503).
    """
    if not isinstance(arguments_hash, str) or not _HASH.fullmatch(arguments_hash):
        raise DecisionRefused(400, "arguments_hash (the 64-hex hash you were shown) is required")
    if reason is not None and not isinstance(reason, str):
        raise DecisionRefused(400, "reason must be a string")
    if reason is not None and len(reason) > MAX_REASON_CHARS:
        raise DecisionRefused(400, f"reason is longer than {MAX_REASON_CHARS} characters")
    if len(call_id) > MAX_CALL_ID_CHARS:
        raise DecisionRefused(400, "call id too long")
    run = tools.run(run_id)
    try:
        snapshot = await asyncio.wait_for(run.status(), QUERY_TIMEOUT)
    except TimeoutError:
        raise DecisionRefused(503, f"run {run_id} did not answer (is a worker running?)") from None
    except (RPCError, WorkflowQueryFailedError) as error:
        raise DecisionRefused(404, f"run {run_id} could not be read: {error}") from None
    except KeyError as error:
        if not is_encrypted_payload_error(error):
            raise
        message = f"this inbox cannot read run {run_id}: {ENCRYPTED_NOTE}"
        raise DecisionRefused(503, message) from None
    approval = next((a for a in snapshot.pending_approvals if a.call_id == call_id), None)
    if approval is None:
        raise DecisionRefused(404, f"no approval is pending for call {call_id} in run {run_id}")
    if approval.arguments_hash != arguments_hash:
        raise DecisionRefused(
            409, "the call's arguments changed since you saw them: look at it again"
        )
    decider = decider_for(user, approval.deciders)
    if decider is None:
        raise DecisionRefused(
            403, f"{user.name} may not decide this call (deciders: {', '.join(approval.deciders)})"
        )
    decision = ApprovalDecision(
        call_id=call_id,
        approve=approve,
        decider=decider,
        reason=reason or None,
        arguments_hash=arguments_hash,
        grant=GrantRequest(scope="run") if approve and remember else None,
    )
    try:
        return await asyncio.wait_for(run.send_decision(decision), DECIDE_TIMEOUT)
    except WorkflowUpdateFailedError as error:
        cause = error.cause
        message = getattr(cause, "message", None) or str(cause or error)
        raise DecisionRefused(409, f"rejected by the run: {message}") from None
    except (TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError):
        raise DecisionRefused(503, "no worker took the decision in time; try again") from None


async def reissue(tools: DurableTools, run_id: str, call_id: str) -> PendingAuthorization:
    """Ask run `run_id` for a fresh authorization link for `call_id` (an expired link).

    Raises:
        DecisionRefused: a malformed call id (400), a call that waits on no authorization
            or a run that refuses (409), or no worker answering (503).
    """
    if len(call_id) > MAX_CALL_ID_CHARS:
        raise DecisionRefused(400, "call id too long")
    run = tools.run(run_id)
    try:
        return await asyncio.wait_for(
            run.handle.execute_update(AgentWorkflow.reissue_authorization, call_id),
            DECIDE_TIMEOUT,
        )
    except WorkflowUpdateFailedError as error:
        cause = error.cause
        message = getattr(cause, "message", None) or str(cause or error)
        raise DecisionRefused(409, f"rejected by the run: {message}") from None
    except (TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError):
        raise DecisionRefused(503, "no worker issued a new link in time; try again") from None
    except RPCError as error:
        raise DecisionRefused(404, f"run {run_id} could not be reached: {error}") from None
