"""One call of an A2A agent: send a message, follow the task it starts, read its result.

The call runs inside the tool's activity. It sends the message (streaming when the agent
and the source allow it), turns streamed status updates into `ctx.progress(...)`
heartbeat details, polls `GetTask` while a task is still working, and on cancellation
asks the agent to cancel the task before acknowledging. A retried attempt that finds
the task id in the previous attempt's heartbeat details follows that task instead of
starting a second one.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
from a2a.client import (
    A2AClientTimeoutError,
    Client,
    ClientCallContext,
    ClientConfig,
    ClientFactory,
)
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
)
from a2a.utils.errors import A2AError
from google.protobuf.struct_pb2 import Struct

from durable_tools.tools._context import ToolContext
from durable_tools.tools._errors import ToolExecutionError
from durable_tools.tools._scrub import scrub

from ._a2a_task import TASK_KEY, TaskTracker
from ._http_auth import HttpAuth

__all__ = ["A2AAgent", "call_agent", "message_id_for"]

logger = logging.getLogger("durable_tools.sources.a2a")

_CANCEL_TIMEOUT = 10.0
_MAX_POLL_FAILURES = 5
"""Passing `GetTask` failures in a row a call rides out before it gives up."""


def message_id_for(idempotency_key: str) -> str:
    """The A2A message id for a call: the same on every attempt of the call."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"durable-tools:{idempotency_key}"))


@dataclass
class A2AAgent:
    """A remote agent as `attach_a2a` found it: its card and how to reach it."""

    card: AgentCard
    label: str
    """The agent's name, for messages and logs (never its URL: it may carry tokens)."""
    auth: tuple[HttpAuth, ...] = ()
    streaming: bool = True
    """Use `SendStreamingMessage` when the card says the agent streams."""
    poll_interval: float = 1.0
    """Seconds between `GetTask` polls of a task that is still working."""
    request_timeout: float = 60.0
    """Seconds one HTTP request (or a gap in a stream) may take."""
    client: httpx.AsyncClient | None = field(default=None, repr=False)
    """An HTTP client of your own (tests, proxies, mTLS); None: one per call."""


def _previous_task(ctx: ToolContext) -> str | None:
    details = ctx.heartbeat_details
    if ctx.attempt > 1 and isinstance(details, Mapping):
        task_id = details.get(TASK_KEY)
        if isinstance(task_id, str) and task_id:
            return task_id
    return None


def _request(
    agent: A2AAgent,
    skill: str | None,
    arguments: Mapping[str, Any],
    ctx: ToolContext,
    *,
    polling: bool,
) -> SendMessageRequest:
    parts = [Part(text=str(arguments.get("message", "")))]
    data = arguments.get("data")
    if data is not None:
        value = Struct()
        value.update(dict(data))
        part = Part()
        part.data.struct_value.CopyFrom(value)
        parts.append(part)
    metadata: dict[str, Any] = {}
    if skill is not None:
        metadata["skill_id"] = skill
    if ctx.idempotency_key:
        metadata["idempotency_key"] = ctx.idempotency_key
    message = Message(
        message_id=message_id_for(ctx.idempotency_key or f"{ctx.run_id}/{ctx.tool_call_id}"),
        role=Role.ROLE_USER,
        parts=parts,
        metadata=metadata,
        task_id=str(arguments.get("task_id") or ""),
        context_id=str(arguments.get("context_id") or ""),
    )
    return SendMessageRequest(
        message=message,
        configuration=SendMessageConfiguration(
            accepted_output_modes=list(agent.card.default_output_modes),
            # Polling: the agent answers at once with the task, which is then followed
            # with GetTask, so no single request outlives the request timeout.
            return_immediately=polling,
        ),
    )


def _status_code(exc: A2AError) -> int | None:
    cause = exc.__cause__
    return cause.response.status_code if isinstance(cause, httpx.HTTPStatusError) else None


def _transient(exc: A2AError) -> bool:
    """A broken connection, a timeout, 429 or 5xx: asking again may work."""
    status = _status_code(exc)
    if status is not None:
        return status == 429 or status >= 500
    return isinstance(exc, A2AClientTimeoutError) or isinstance(exc.__cause__, httpx.RequestError)


def _classify(exc: A2AError, label: str, auth: Sequence[HttpAuth], secrets: list[str]) -> Exception:
    """A classified error for a failed request.

    Retryable only when the agent cannot have taken the message (no connection, HTTP
    429): a retry sends the message again, and A2A agents need not deduplicate it.
    """
    cause = exc.__cause__
    details: dict[str, Any] = {"exception_type": type(exc).__name__}
    status = _status_code(exc)
    if status is not None:
        details["status_code"] = status
        if status in (401, 403):
            for a in auth:
                special = a.on_unauthorized(status)
                if special is not None:
                    return special
        return ToolExecutionError(
            f"{label} answered HTTP {status}", retryable=status == 429, details=details
        )
    if isinstance(cause, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout):
        return ToolExecutionError(
            f"could not connect to {label}: {type(cause).__name__}", retryable=True, details=details
        )
    if isinstance(exc, A2AClientTimeoutError):
        return ToolExecutionError(f"{label} did not answer in time", details=details)
    return ToolExecutionError(f"{label}: {scrub(str(exc), secrets)[:500]}", details=details)


async def _cancel(
    client: Client, tracker: TaskTracker, call: ClientCallContext, label: str
) -> None:
    try:
        await asyncio.wait_for(
            client.cancel_task(CancelTaskRequest(id=tracker.task_id), context=call),
            timeout=_CANCEL_TIMEOUT,
        )
    except Exception as exc:  # the call is cancelled either way; say so in the log
        logger.warning(
            "could not cancel task %s of %s: %s", tracker.task_id, label, type(exc).__name__
        )


async def _poll(
    client: Client, tracker: TaskTracker, call: ClientCallContext, agent: A2AAgent, *, first: bool
) -> None:
    """Poll `GetTask` until the task ends or needs input; ride out passing failures.

    Passing failures are retried here, within the attempt: a failed attempt would be
    retried by sending the message again, which may start a second task.
    """
    failures = 0
    delay = 0.0 if first else agent.poll_interval
    while tracker.task_id and not tracker.done:
        await asyncio.sleep(delay)
        delay = agent.poll_interval
        try:
            task = await client.get_task(GetTaskRequest(id=tracker.task_id), context=call)
        except A2AError as exc:
            failures += 1
            if not _transient(exc) or failures > _MAX_POLL_FAILURES:
                raise
            delay = min(agent.poll_interval * 2**failures, 30.0)
            continue
        failures = 0
        tracker.apply_task(task)


async def call_agent(
    agent: A2AAgent, skill: str | None, arguments: Mapping[str, Any], ctx: ToolContext
) -> str:
    """Send one message to the agent and follow the task to its end; return its text.

    Raises:
        ToolExecutionError: the task failed, was rejected or cancelled by the agent, or
            the agent could not be reached (retryable only when it cannot have taken
            the message).
        NeedsAuthorization: the agent refused the user's OAuth token (HTTP 401).
        asyncio.CancelledError: the call was cancelled (the agent was asked to cancel).
    """
    headers: dict[str, str] = {}
    for auth in agent.auth:
        headers.update(auth.headers(ctx))
    secrets = [value for auth in agent.auth for value in auth.secret_values(ctx)]
    call = ClientCallContext(service_parameters=headers, timeout=agent.request_timeout)
    streaming = agent.streaming and agent.card.capabilities.streaming
    own_http = agent.client is None
    http = agent.client or httpx.AsyncClient(timeout=agent.request_timeout)
    tracker = TaskTracker(ctx)
    try:
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=streaming)).create(
            agent.card
        )
        previous = _previous_task(ctx)
        try:
            if previous is not None:
                tracker.task_id = previous
            else:
                request = _request(agent, skill, arguments, ctx, polling=not streaming)
                try:
                    async for event in client.send_message(request, context=call):
                        tracker.apply(event)
                        if tracker.done:
                            break
                except A2AError as exc:
                    if not (tracker.task_id and _transient(exc)):
                        raise
                    # The stream broke, but the task is named: follow it by polling.
                    logger.info("stream from %s broke; polling the task", agent.label)
            await _poll(client, tracker, call, agent, first=previous is not None)
        except asyncio.CancelledError:
            if tracker.task_id and not tracker.done:
                await _cancel(client, tracker, call, agent.label)
            raise
        except A2AError as exc:
            raise _classify(exc, agent.label, agent.auth, secrets) from None
        if not tracker.done:
            raise ToolExecutionError(
                f"{agent.label} answered with neither a message nor a task", retryable=False
            )
        return scrub(tracker.result(agent.label), secrets)
    finally:
        if own_http:
            await http.aclose()
