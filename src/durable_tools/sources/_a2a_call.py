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
import json
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
    Artifact,
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
)
from a2a.utils.errors import A2AError
from google.protobuf.json_format import MessageToDict
from google.protobuf.struct_pb2 import Struct

from durable_tools.tools._context import ToolContext
from durable_tools.tools._errors import ToolExecutionError
from durable_tools.tools._scrub import scrub

from ._http_auth import HttpAuth

__all__ = ["A2AAgent", "call_agent", "message_id_for"]

logger = logging.getLogger("durable_tools.sources.a2a")

_FINAL = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
    }
)
_INTERRUPTED = frozenset({TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED})
_MAX_PROGRESS_TEXT = 500
_CANCEL_TIMEOUT = 10.0
_MAX_POLL_FAILURES = 5
"""Passing `GetTask` failures in a row a call rides out before it gives up."""
_TASK_KEY = "a2a_task_id"
"""The heartbeat-details key under which a call records the task it follows."""


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


def _state_name(state: int) -> str:
    name = TaskState.Name(state)  # type: ignore[arg-type]
    return name.removeprefix("TASK_STATE_").lower().replace("_", "-")


def _part_text(part: Part) -> str:
    if part.HasField("text"):
        return part.text
    if part.HasField("data"):
        return json.dumps(MessageToDict(part.data), ensure_ascii=False, sort_keys=True)
    label = part.filename or "file"
    media = f" ({part.media_type})" if part.media_type else ""
    if part.HasField("url"):
        return f"[{label}{media}: {part.url}]"
    if part.HasField("raw"):
        return f"[{label}{media}: {len(part.raw)} bytes, not shown]"
    return ""


def _parts_text(parts: Sequence[Part]) -> str:
    return "\n".join(t for t in (_part_text(p) for p in parts) if t)


@dataclass
class _Tracker:
    """The task as the events so far describe it."""

    ctx: ToolContext
    task_id: str = ""
    context_id: str = ""
    state: int = TaskState.TASK_STATE_UNSPECIFIED
    status_text: str = ""
    artifacts: dict[str, Artifact] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    reply: Message | None = None
    """A direct message answer (no task)."""
    reported: tuple[int, str] | None = None

    @property
    def done(self) -> bool:
        return self.reply is not None or self.state in _FINAL or self.state in _INTERRUPTED

    def apply(self, event: StreamResponse) -> None:
        kind = event.WhichOneof("payload")
        if kind == "task":
            self.apply_task(event.task)
        elif kind == "message":
            self.reply = event.message
        elif kind == "status_update":
            status = event.status_update
            self._ids(status.task_id, status.context_id)
            self._status(status.status.state, status.status.message)
        elif kind == "artifact_update":
            artifact = event.artifact_update
            self._ids(artifact.task_id, artifact.context_id)
            self._artifact(artifact.artifact, append=artifact.append)

    def apply_task(self, task: Task) -> None:
        self._ids(task.id, task.context_id)
        for artifact in task.artifacts:
            self._artifact(artifact, append=False)
        self._status(task.status.state, task.status.message)

    def _ids(self, task_id: str, context_id: str) -> None:
        self.task_id = task_id or self.task_id
        self.context_id = context_id or self.context_id

    def _artifact(self, artifact: Artifact, *, append: bool) -> None:
        key = artifact.artifact_id or f"#{len(self.order)}"
        if key not in self.artifacts:
            self.order.append(key)
            self.artifacts[key] = Artifact()
            self.artifacts[key].CopyFrom(artifact)
        elif append:
            self.artifacts[key].parts.extend(artifact.parts)
        else:
            self.artifacts[key].CopyFrom(artifact)

    def _status(self, state: int, message: Message) -> None:
        if state != TaskState.TASK_STATE_UNSPECIFIED:
            self.state = state
        text = _parts_text(message.parts)
        if text:
            self.status_text = text
        self._report()

    def _report(self) -> None:
        # Heartbeat details: what a person watching the activity reads, and the task id a
        # retried attempt resumes from. Only when something changed.
        now = (self.state, self.status_text)
        if not self.task_id or now == self.reported:
            return
        self.reported = now
        state, text = _state_name(self.state), self.status_text[:_MAX_PROGRESS_TEXT]
        self.ctx.progress(
            f"{state}: {text}" if text else state,
            details={
                _TASK_KEY: self.task_id,
                "a2a_context_id": self.context_id,
                "state": state,
                "message": text,
            },
        )

    def result(self, label: str) -> str:
        if self.reply is not None:
            return _parts_text(self.reply.parts) or f"{label} answered with an empty message."
        ids = f"task {self.task_id}, context {self.context_id}"
        if self.state == TaskState.TASK_STATE_COMPLETED:
            texts = [_parts_text(self.artifacts[k].parts) for k in self.order]
            text = "\n\n".join(t for t in texts if t) or self.status_text
            return text or f"{label} completed the task without output."
        if self.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            # Not an error: the model reads the question and may answer it by calling the
            # tool again with the same task_id.
            return (
                f"{label} needs more input before it can go on ({ids}): "
                f"{self.status_text or '(no question given)'}\n"
                f"To answer, call this tool again with task_id={self.task_id!r} and "
                f"context_id={self.context_id!r}."
            )
        said = f": {self.status_text}" if self.status_text else ""
        if self.state == TaskState.TASK_STATE_AUTH_REQUIRED:
            raise ToolExecutionError(
                f"{label} needs authorization it was not given ({ids}){said}",
                details={"task_id": self.task_id, "state": "auth-required"},
            )
        state = _state_name(self.state)
        raise ToolExecutionError(
            f"{label} {'rejected' if state == 'rejected' else 'ended'} the task "
            f"({ids}) as {state}{said}",
            retryable=False,
            details={"task_id": self.task_id, "state": state},
        )


def _previous_task(ctx: ToolContext) -> str | None:
    details = ctx.heartbeat_details
    if ctx.attempt > 1 and isinstance(details, Mapping):
        task_id = details.get(_TASK_KEY)
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


async def _cancel(client: Client, tracker: _Tracker, call: ClientCallContext, label: str) -> None:
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
    client: Client, tracker: _Tracker, call: ClientCallContext, agent: A2AAgent, *, first: bool
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
    tracker = _Tracker(ctx)
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
