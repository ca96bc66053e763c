"""Deciding a pending call as an authenticated user, bound to the arguments they saw.

Deciding is `AgentRun.decide_request`; this turns its typed errors into HTTP statuses.
"""

from __future__ import annotations

import asyncio

from temporalio.client import WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError
from temporalio.service import RPCError

from durable_tools._callers._tokens import User
from durable_tools.client import DurableTools
from durable_tools.client.runs._decide import (
    DECIDE_TIMEOUT,
    AlreadyDecided,
    AmbiguousRequest,
    DecisionError,
    DecisionTimedOut,
    MalformedDecision,
    NotADecider,
    NothingPending,
    RejectedByRun,
    RunEnded,
    RunNotFound,
    RunUnreadable,
    StaleRequest,
    WorkerUnavailable,
    arguments_hash_given,
)
from durable_tools.protocol._limits import MAX_CALL_ID_CHARS
from durable_tools.protocol._policy_types import GrantRequest
from durable_tools.workflows import PendingAuthorization

from ._hosts import run_handle

__all__ = ["DecisionRefused", "decide", "reissue"]

_STATUS: dict[type[DecisionError], int] = {
    MalformedDecision: 400,
    NotADecider: 403,
    RunNotFound: 404,
    NothingPending: 404,
    AlreadyDecided: 409,
    StaleRequest: 409,
    AmbiguousRequest: 409,
    RejectedByRun: 409,
    RunEnded: 409,
    WorkerUnavailable: 503,
    DecisionTimedOut: 503,
    RunUnreadable: 503,
}
"""The HTTP status answering each reason a decision was not recorded."""


class DecisionRefused(Exception):
    """The inbox or the run refused a decision; `status` is the HTTP status to answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _hash_of(given: object) -> str:
    """The arguments hash of a decision's body (required: a person decides what they saw).

    Raises:
        DecisionRefused: none given (400 "required"), or malformed (400 "malformed").
    """
    if given is None or given == "":
        raise DecisionRefused(
            400, "arguments_hash is required: the 64-hex hash of the request you were shown"
        )
    try:
        return arguments_hash_given(given)
    except MalformedDecision as error:
        raise DecisionRefused(400, f"arguments_hash is malformed: {error.message}") from None


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
            such run or pending call (404), a changed or decided call, an ended run or a
            rejection by the run (409), no worker answering or a run whose payloads this
            inbox has no keys for (503).
    """
    digest = _hash_of(arguments_hash)
    if reason is not None and not isinstance(reason, str):
        raise DecisionRefused(400, "reason must be a string")
    try:
        run = await run_handle(tools, run_id)
        recorded = await run.decide_request(
            call_id,
            approve,
            arguments_hash=digest,
            decider=user.name,
            groups=user.groups,
            reason=reason or None,
            grant=GrantRequest(scope="run") if approve and remember else None,
        )
    except DecisionError as refused:
        raise DecisionRefused(_STATUS.get(type(refused), 409), refused.message) from None
    return recorded.verdict


async def reissue(tools: DurableTools, run_id: str, call_id: str) -> PendingAuthorization:
    """Ask run `run_id` for a fresh authorization link for `call_id` (an expired link).

    Raises:
        DecisionRefused: a malformed call id (400), a call that waits on no authorization
            or a run that refuses (409), or no worker answering (503).
    """
    if len(call_id) > MAX_CALL_ID_CHARS:
        raise DecisionRefused(400, "call id too long")
    run = await run_handle(tools, run_id)
    try:
        return await asyncio.wait_for(
            run.handle.execute_update(
                run.prefix + "reissue_authorization", call_id, result_type=PendingAuthorization
            ),
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
