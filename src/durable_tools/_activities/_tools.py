"""One activity type per tool, named after the tool.

The activity rebuilds the tool's `ToolContext` on the worker (idempotency key, attempt,
heartbeat details, resources, secrets, OAuth token), runs the tool through the registry,
and returns a bounded `ToolOutcome`. Failures leave as Temporal application errors whose
type is the stable `ErrorKind` value and whose first detail is the model-facing message.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from durable_tools._activities._runtime import ToolRuntime
from durable_tools._activities._types import ToolInvocation
from durable_tools.protocol._limits import MAX_TOOL_ERROR_CHARS, clip
from durable_tools.protocol._options import retry_delay
from durable_tools.tools._artifacts import ArtifactStore
from durable_tools.tools._classify import apply_retry_spec, classify_exception
from durable_tools.tools._context import ToolContext
from durable_tools.tools._errors import (
    RUN_ENDING,
    Cancelled,
    ToolError,
    ToolTimeout,
    error_message_for_model,
)
from durable_tools.tools._events import TOOL_POLICY_EXHAUSTED, ToolEvent, scrub_event
from durable_tools.tools._formatting import format_result, output_lost_outcome
from durable_tools.tools._progress_scrub import scrub_progress
from durable_tools.tools._registry import RegisteredTool
from durable_tools.tools._results import ArtifactRef, ToolOutcome, ToolResult
from durable_tools.tools._scrub import scrub, scrub_value
from durable_tools.tools._spec import ToolSpec

__all__ = [
    "AUTO_HEARTBEAT_SECONDS",
    "HEARTBEAT_THROTTLE",
    "make_tool_activity",
    "to_application_error",
]

log = logging.getLogger("durable_tools.activities")


def to_application_error(
    error: ToolError,
    call_id: str,
    tool_name: str,
    secrets: list[str],
    attempt: int = 1,
    *,
    retryable: bool | None = None,
) -> ApplicationError:
    """The Temporal form of a classified tool error, scrubbed of secret values.

    Its details are the model-facing message and the attempt number (counting the
    workflow's own retries), so the run's timeline counts retries made by the engine, then
    `RUN_ENDING` when the error ends the run (never retried, whatever the flags say).
    `retryable` overrides the error's own flag (the tool's `retry_on` said no). Both
    texts are scrubbed, then clipped to `MAX_TOOL_ERROR_CHARS`, so any failure fits in
    history and in the worker's log (scrubbing first: a cut never splits a secret).
    """
    message = clip(scrub(error.message, secrets), MAX_TOOL_ERROR_CHARS)
    model_message = clip(
        scrub(error_message_for_model(call_id, tool_name, error), secrets), MAX_TOOL_ERROR_CHARS
    )
    ending = (RUN_ENDING,) if error.ends_run else ()
    retryable = error.retryable if retryable is None else retryable
    return ApplicationError(
        message,
        model_message,
        attempt,
        *ending,
        type=error.kind.value,
        non_retryable=error.ends_run or not retryable,
        next_retry_delay=(
            timedelta(seconds=error.retry_after) if error.retry_after is not None else None
        ),
    )


AUTO_HEARTBEAT_SECONDS = 1.0
"""How often a running non-local tool heartbeats by itself (the SDK throttles the sends)."""

HEARTBEAT_THROTTLE = timedelta(seconds=2)
"""At most one heartbeat per this interval for a tool without `heartbeat_timeout`: the
longest a cancellation waits to reach it. Set on the worker as
`default_heartbeat_throttle_interval` (the SDK's default, 30 s, would delay every cancel)."""


def _heartbeat_every(heartbeat_timeout: float | None) -> float:
    if heartbeat_timeout is None:
        return AUTO_HEARTBEAT_SECONDS
    return max(min(heartbeat_timeout / 3, AUTO_HEARTBEAT_SECONDS), 0.05)


async def _heartbeat_while(
    work: Awaitable[Any], interval: float | None, details: list[Any], context: ToolContext
) -> Any:
    """Await `work`, heartbeating every `interval` seconds (None: never, local activities).

    Temporal delivers a cancellation only in the reply to a heartbeat, so every non-local
    tool heartbeats, whether or not it reports progress or sets `heartbeat_timeout`. On
    cancellation the call's flag is set and its subprocesses killed; then the tool gets to
    end: an async tool through `CancelledError`, a sync tool (a thread nothing can
    interrupt) by seeing `ctx.cancelled`. What it ends with is the call's outcome; a
    `Cancelled` error, or a `CancelledError`, acknowledges the cancellation. Anything else
    is logged (`_log_late_end`): the run may have stopped waiting for it.
    """
    task = asyncio.ensure_future(work)
    cancelled: float | None = None  # when the cancellation arrived (monotonic)
    try:
        while not task.done():
            try:
                await asyncio.wait({task}, timeout=interval)
            except asyncio.CancelledError:
                if cancelled is None:
                    cancelled = time.monotonic()
                    context._cancel(_why_cancelled())
                    task.cancel()
                current = asyncio.current_task()
                if current is not None:
                    current.uncancel()
                continue
            if not task.done() and interval is not None:
                activity.heartbeat(*details[:1])
    finally:
        context._kill_subprocesses()  # a subprocess lives no longer than its call
    if cancelled is not None:
        error = None if task.cancelled() else task.exception()
        if task.cancelled() or isinstance(error, Cancelled):
            raise asyncio.CancelledError()
        _log_late_end(context, error, time.monotonic() - cancelled)
    return task.result()


def _why_cancelled() -> ToolError:
    """How this attempt was stopped, from what the server said: cancelled by its run, or
    timed out. The server no longer knowing the attempt (`not_found`) means it timed out
    when one of its deadlines has passed; otherwise its run stopped waiting for it."""
    details = activity.cancellation_details()
    if details is None or details.cancel_requested:
        return Cancelled("the call was cancelled")
    if details.timed_out or (details.not_found and _past_a_deadline(activity.info())):
        return ToolTimeout("the attempt timed out")
    if details.worker_shutdown:
        return Cancelled("the worker running the attempt is shutting down")
    return Cancelled("the attempt was stopped: its run no longer waits for it")


def _past_a_deadline(info: activity.Info) -> bool:
    now = datetime.now(UTC)
    ends = [
        info.started_time + timeout
        for timeout in (info.start_to_close_timeout,)
        if timeout is not None
    ]
    if info.schedule_to_close_timeout is not None:
        ends.append(info.scheduled_time + info.schedule_to_close_timeout)
    return any(now >= end for end in ends)


def _exhausted(
    spec: ToolSpec, info: activity.Info, attempt: int, error: ToolError, retryable: bool
) -> bool:
    """Whether this failed attempt ends a call its policy would retry: it timed out or
    failed retryably, and no attempt follows (none left, or the next would start past
    the call's schedule-to-close deadline). What the run records as
    `tool.policy_exhausted`, seen from the worker."""
    retry = spec.policy.retry
    timed_out = isinstance(error, ToolTimeout) and not retryable
    if not (retryable or timed_out):
        return False  # not retried by design: nothing was exhausted
    if timed_out:
        repeats = retry.retry_timeouts
        if not (spec.safety.safe_to_repeat if repeats is None else repeats):
            return True  # a timed-out attempt of this tool is never retried
    if retry.maximum_attempts != 0 and attempt >= retry.maximum_attempts:
        return True
    if info.schedule_to_close_timeout is None:
        return False
    deadline = info.scheduled_time + info.schedule_to_close_timeout
    requested = error.retry_after if not timed_out else None
    delay = timedelta(seconds=retry_delay(retry, attempt, requested))
    return datetime.now(UTC) + delay >= deadline


def _log_late_end(context: ToolContext, error: BaseException | None, late: float) -> None:
    """Log how a tool that went on after its cancellation ended.

    Its run waits only a grace period for a cancelled tool (workflows `_execute`), then
    records the call's outcome as unknown and may end: this activity's result can then no
    longer enter the run's history, and this line is the record of what the tool did. Only
    the exception's type is named: its message may hold a secret or personal data.
    """
    how = "returned a result" if error is None else f"raised {type(error).__name__}"
    log.warning(
        "tool %s call %s of run %s ignored its cancellation and %s %.1f s after it; if the "
        "run stopped waiting (its outcome recorded as unknown), this is the only record",
        context.tool_name,
        context.tool_call_id,
        context.run_id,
        how,
        late,
        extra={
            "tool": context.tool_name,
            "call_id": context.tool_call_id,
            "run_id": context.run_id,
            "late_outcome": "returned" if error is None else "raised",
            "seconds_after_cancel": round(late, 1),
        },
    )


class _StoreNeeded(Exception):
    """The output is over its limit: formatting it writes to the artifact store."""


class _NoStore:
    """The store `format_result` gets on the event loop: it refuses, so that an output
    the real store must keep is formatted again in a thread."""

    def put(self, data: bytes, media_type: str = "application/octet-stream") -> ArtifactRef:
        raise _StoreNeeded

    def get(self, ref: ArtifactRef) -> bytes:
        raise KeyError(ref.uri)


def _small_text(result: ToolResult, limit_bytes: int) -> bool:
    """Whether `result` is text blocks only, of at most `limit_bytes` characters in all:
    cheap to format on the event loop (no JSON to render, likely no store write)."""
    if result.structured is not None:
        return False
    chars = 0
    for block in result.content:
        if block.type != "text":
            return False
        chars += len(block.text or "")
    return chars <= limit_bytes


async def _format(
    result: ToolResult, *, store: ArtifactStore | None, **options: Any
) -> ToolOutcome:
    """`format_result`, on the event loop when the result is small text, else in a thread.

    A thread costs a hop each way on every call, which on a busy worker is most of what
    formatting a one-line result costs. The store may write to disk or to S3 over the
    network, and a large output takes a while to scrub and cut, so those stay off the
    event loop: a small result that still needs the store (scrubbing made it longer) is
    formatted again in the thread.
    """
    if _small_text(result, options["limit_bytes"]):
        try:
            return format_result(result, store=_NoStore() if store is not None else None, **options)
        except _StoreNeeded:
            pass
    return await asyncio.to_thread(format_result, result, store=store, **options)


def make_tool_activity(
    tool: RegisteredTool, runtime: ToolRuntime
) -> Callable[[ToolInvocation], Awaitable[Any]]:
    """Build the activity function for one registered tool."""
    spec = tool.spec

    @activity.defn(name=spec.name)
    async def run_tool(invocation: ToolInvocation) -> Any:
        info = activity.info()
        attempt = invocation.attempt_offset + info.attempt
        first = attempt == 1
        previous = info.heartbeat_details[0] if info.heartbeat_details else None
        last_details: list[Any] = [previous]
        loop = asyncio.get_running_loop()
        loop_thread = threading.get_ident()
        activity_context = contextvars.copy_context()

        def progress(details: Any = None) -> None:
            details = scrub_progress(details, secrets)  # watchers read it: no secrets
            last_details[0] = details
            if info.is_local:
                return
            if threading.get_ident() == loop_thread:
                activity.heartbeat(details)
            else:  # a sync tool's thread: the SDK heartbeats on the event loop only
                loop.call_soon_threadsafe(activity.heartbeat, details, context=activity_context)

        secrets = runtime.secret_values()
        final_on_failure = False
        context: ToolContext | None = None

        async def exhausted(error: ToolError, *, retryable: bool) -> None:
            """Emit `tool.policy_exhausted` on the worker's bus when no attempt follows."""
            if not _exhausted(spec, info, attempt, error, retryable):
                return
            await runtime.registry.emit(
                scrub_event(
                    ToolEvent(
                        name=TOOL_POLICY_EXHAUSTED,
                        tool_name=spec.name,
                        call_id=invocation.call_id,
                        run_id=invocation.workflow_id,
                        attempt=attempt,
                        error_kind=error.kind.value,
                        message=error.message,
                    ),
                    secrets,
                )
            )

        try:
            access_token = None
            if spec.oauth is not None:
                if runtime.oauth is None:
                    raise ToolError(
                        f"tool {spec.name!r} needs OAuth ({spec.oauth.provider}) but this worker "
                        "has no OAuth broker configured"
                    )
                # Before-hooks run on the first attempt only (see `ToolRegistry.invoke`): an
                # attempt that fails before them must not be retried, or a retry would skip them.
                final_on_failure = first and runtime.registry.has_before_hooks
                access_token = await runtime.oauth.access_token(invocation.identity, spec.oauth)
                final_on_failure = False
                secrets.append(access_token)
            context = ToolContext(
                tool_call_id=invocation.call_id,
                tool_name=spec.name,
                run_id=invocation.workflow_id,
                idempotency_key=invocation.idempotency_key,
                attempt=attempt,
                identity=invocation.identity,
                heartbeat_details=previous,
                resources=runtime.resources,
                secrets=runtime.secrets,
                access_token=access_token,
                artifact_store=runtime.artifact_store,
                input_responses=invocation.input_responses,
                request_state=invocation.request_state,
                _progress=progress,
            )
            started = time.monotonic()
            result = await _heartbeat_while(
                runtime.registry.invoke(
                    spec.name,
                    invocation.arguments,
                    context,
                    run_before_hooks=first,
                    bound_schema=invocation.approved_schema,
                    bound_safety=invocation.approved_safety,
                ),
                None if info.is_local else _heartbeat_every(spec.policy.heartbeat_timeout),
                last_details,
                context,
            )
        except asyncio.CancelledError:
            if context is not None and isinstance(context._interruption, ToolTimeout):
                await exhausted(context._interruption, retryable=False)
            raise
        except Exception as exc:  # classified once, here, for every tool
            classified = classify_exception(exc)
            cause = exc.__cause__ if exc is classified else exc
            retryable = not final_on_failure and apply_retry_spec(
                classified, spec.policy.retry, cause
            )
            await exhausted(classified, retryable=retryable)
            raise to_application_error(
                classified, invocation.call_id, spec.name, secrets, attempt, retryable=retryable
            ) from None
        # The tool has run: from here on nothing may raise, or the engine would run it again.
        try:
            outcome = await _format(
                result,
                call_id=invocation.call_id,
                tool_name=spec.name,
                limit_bytes=invocation.output_limit_bytes,
                store=runtime.artifact_store,
                redact=spec.safety.redact,
                secrets=secrets,
            )
        except Exception as exc:  # a full or read-only artifact store, a formatting bug
            reason = scrub(f"{type(exc).__name__}: {exc}", secrets)
            log.error(
                "tool %s call %s completed but its output could not be kept: %s",
                spec.name,
                invocation.call_id,
                reason,
            )
            outcome = output_lost_outcome(
                result,
                call_id=invocation.call_id,
                tool_name=spec.name,
                reason=reason,
                limit_bytes=invocation.output_limit_bytes,
                redact=spec.safety.redact,
                secrets=secrets,
            )
        outcome.attempt = attempt
        if context is not None:
            outcome.events = [
                note.model_copy(
                    update={
                        "detail": scrub(note.detail, secrets),
                        "data": scrub_value(note.data, secrets),
                    }
                )
                for note in context.emitted
            ]
        elapsed = result.elapsed_ms or (time.monotonic() - started) * 1000
        # Recorded in history with every call: a tenth of a millisecond is precision enough,
        # and 17 significant digits of a float cost a dozen bytes a call for nothing.
        outcome.elapsed_ms = round(elapsed, 1)
        return outcome

    return run_tool
