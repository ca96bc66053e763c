"""One activity type per tool, named after the tool.

The activity rebuilds the tool's `ToolContext` on the worker (idempotency key, attempt,
heartbeat details, resources, secrets, OAuth token), runs the tool through the registry,
and returns a bounded `ToolOutcome`. Failures leave as Temporal application errors whose
type is the stable `ErrorKind` value and whose first detail is the model-facing message.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from durable_tools.activities._runtime import ToolRuntime
from durable_tools.activities._types import ToolInvocation
from durable_tools.tools._classify import classify_exception, error_message_for_model
from durable_tools.tools._context import ToolContext
from durable_tools.tools._errors import ToolError
from durable_tools.tools._formatting import format_result, output_lost_outcome
from durable_tools.tools._registry import RegisteredTool
from durable_tools.tools._scrub import scrub

__all__ = ["make_tool_activity", "to_application_error"]

log = logging.getLogger("durable_tools.activities")


def to_application_error(
    error: ToolError, call_id: str, tool_name: str, secrets: list[str]
) -> ApplicationError:
    """The Temporal form of a classified tool error, scrubbed of secret values."""
    message = scrub(error.message, secrets)
    model_message = scrub(error_message_for_model(call_id, tool_name, error), secrets)
    return ApplicationError(
        message,
        model_message,
        type=error.kind.value,
        non_retryable=not error.retryable,
        next_retry_delay=(
            timedelta(seconds=error.retry_after) if error.retry_after is not None else None
        ),
    )


async def _heartbeat_while(work: Awaitable[Any], interval: float | None, details: list[Any]) -> Any:
    """Await `work`, heartbeating every `interval` seconds so cancellation and crash
    detection work even for tools that never report progress themselves."""
    if interval is None:
        return await work
    task = asyncio.ensure_future(work)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=interval)
            if done:
                return task.result()
            activity.heartbeat(*details[:1])
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task


def make_tool_activity(
    tool: RegisteredTool, runtime: ToolRuntime
) -> Callable[[ToolInvocation], Awaitable[Any]]:
    """Build the activity function for one registered tool."""
    spec = tool.spec

    @activity.defn(name=spec.name)
    async def run_tool(invocation: ToolInvocation) -> Any:
        info = activity.info()
        attempt = invocation.attempt_offset + info.attempt
        previous = info.heartbeat_details[0] if info.heartbeat_details else None
        last_details: list[Any] = [previous]

        def progress(details: Any = None) -> None:
            last_details[0] = details
            if not info.is_local:
                activity.heartbeat(details)

        secrets = runtime.secret_values()
        try:
            access_token = None
            if spec.oauth is not None:
                if runtime.oauth is None:
                    raise ToolError(
                        f"tool {spec.name!r} needs OAuth ({spec.oauth.provider}) but this worker "
                        "has no OAuth broker configured"
                    )
                access_token = await runtime.oauth.access_token(invocation.identity, spec.oauth)
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
                _progress=progress,
                _is_cancelled=activity.is_cancelled,
            )
            heartbeat_every = (
                None
                if info.is_local or spec.policy.heartbeat_timeout is None
                else max(spec.policy.heartbeat_timeout / 3, 0.05)
            )
            started = time.monotonic()
            result = await _heartbeat_while(
                runtime.registry.invoke(spec.name, invocation.arguments, context),
                heartbeat_every,
                last_details,
            )
        except asyncio.CancelledError:
            raise
        except ToolError as error:
            raise to_application_error(error, invocation.call_id, spec.name, secrets) from None
        except Exception as exc:  # classified once, here, for every tool
            classified = classify_exception(exc)
            raise to_application_error(classified, invocation.call_id, spec.name, secrets) from None
        # The tool has run: from here on nothing may raise, or the engine would run it again.
        try:
            outcome = format_result(
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
        outcome.elapsed_ms = result.elapsed_ms or (time.monotonic() - started) * 1000
        return outcome

    return run_tool
