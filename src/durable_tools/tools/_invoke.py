"""One call of a tool (`ToolRegistry.invoke`), with its hooks, its events and its checks."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ._classify import classify_exception
from ._context import ToolContext
from ._errors import Cancelled, Denied, InvalidArguments, ToolError
from ._events import (
    TOOL_COMPLETED,
    TOOL_FAILED,
    TOOL_INVALID_ARGS,
    TOOL_SKIPPED,
    TOOL_STARTED,
    ToolEvent,
    scrub_event,
)
from ._formatting import to_tool_result
from ._middleware import (
    Skip,
    ToolCallInfo,
    ToolFailure,
    interruption,
    run_after,
    run_after_failure,
    run_before,
)
from ._registered import RegisteredTool
from ._results import ContentBlock, ToolResult
from ._validation import check_arguments, safety_digest, validate_output

__all__ = ["invoke_tool"]


async def invoke_tool(
    tool: RegisteredTool,
    arguments: Mapping[str, Any] | str,
    context: ToolContext,
    *,
    middleware: tuple[object, ...],
    emit: Callable[[ToolEvent], Awaitable[None]],
    validate_outputs: bool,
    run_before_hooks: bool,
    bound_schema: str | None = None,
    bound_safety: str | None = None,
) -> ToolResult:
    """Run one call of `tool` (see `ToolRegistry.invoke`, which documents the rules).

    Args:
        tool: The tool.
        arguments: JSON text or a mapping.
        context: The call's context.
        middleware: The registry's middlewares, in order.
        emit: Delivers a `tool.*` event (the registry's `emit`).
        validate_outputs: Whether the registry checks structured results.
        run_before_hooks: False on a retry attempt of a call whose hooks already passed.
        bound_schema: `schema_digest` of the input schema a person approved the call
            under; when the tool's schema is another one now, the arguments are not
            checked against it (the approval binds what the approver saw).
        bound_safety: `safety_digest` of the tool a person approved the call for; when
            the tool's safety metadata is other now (it runs shell commands since), the
            call is refused with `Denied` and never runs: the approver saw another tool.
    """
    spec = tool.spec

    secrets = [*context.secrets.values(), *filter(None, [context.access_token])]

    def event(kind: str, **extra: Any) -> ToolEvent:
        return scrub_event(
            ToolEvent(
                name=kind,
                tool_name=spec.name,
                call_id=context.tool_call_id,
                run_id=context.run_id,
                attempt=context.attempt,
                **extra,
            ),
            secrets,
        )

    try:
        if bound_safety is not None and bound_safety != safety_digest(spec):
            raise Denied(
                f"the tool {spec.name!r} changed since this call was approved (what it may "
                "do: shell, filesystem, network, money, workspace, side effects or tags): "
                "it was not run; ask again"
            )
        args = check_arguments(spec, arguments, bound_schema=bound_schema).values
        values = tool.to_python(args)
    except InvalidArguments as error:
        error.attribute_to(tool_name=spec.name, call_id=context.tool_call_id)
        await emit(
            event(TOOL_INVALID_ARGS, message=error.message, details={"errors": error.errors})
        )
        raise
    call = ToolCallInfo(tool=tool, arguments=args, context=context)
    started = time.monotonic()
    body_started = False
    after_ran = False  # the after-hooks saw this attempt: a failure in them is not shown again

    async def failed(failure: ToolError) -> None:
        """Tell the after-hooks (if the tool was started) and the listeners, once."""
        elapsed = (time.monotonic() - started) * 1000
        failed_event = event(
            TOOL_FAILED,
            elapsed_ms=elapsed,
            error_kind=failure.kind.value,
            message=failure.message,
            details={"retryable": failure.retryable, **failure.details},
        )
        if body_started and not after_ran:
            seen = ToolFailure.of(failure, failed_event.message or "", elapsed)
            await run_after_failure(middleware, call, seen)
        await emit(failed_event)

    try:
        skip = await run_before(middleware, call) if run_before_hooks else None
        if isinstance(skip, Skip):
            elapsed = (time.monotonic() - started) * 1000
            await emit(event(TOOL_SKIPPED, elapsed_ms=elapsed, message=skip.reason))
            text = f"Tool call {context.tool_call_id} to {spec.name!r} was not run: {skip.reason}"
            return ToolResult(
                content=[ContentBlock(type="text", text=text)],
                is_error=True,
                skipped=skip.reason,
                elapsed_ms=elapsed,
            )
        await emit(event(TOOL_STARTED))
        body_started = True
        raw = await tool.call(tool.inject(values, context))
        result = to_tool_result(raw)
        if (
            validate_outputs
            and spec.validates_output
            and result.structured is not None
            and not result.is_error
        ):
            validate_output(spec, result.structured)  # never retryable: the body ran
        after_ran = True
        result = await run_after(middleware, call, result)
        if not isinstance(result, ToolResult):
            raise TypeError(f"an after-hook returned {type(result).__name__}, not a ToolResult")
    except asyncio.CancelledError:
        # Cancelled, or stopped by its timeout (the activity says which): still an end.
        await failed(interruption(context))
        raise
    except Exception as exc:
        failure = classify_exception(exc)
        failure.attribute_to(tool_name=spec.name, call_id=context.tool_call_id)
        if not body_started and run_before_hooks and failure.retryable:
            failure.retryable = False  # a retry would not run the hooks again
        # A tool acknowledging its cancellation raises `Cancelled`; the activity may know
        # better (it timed out), and its hooks and listeners are told that.
        stopped = isinstance(failure, Cancelled) and context._interruption is not None
        await failed(interruption(context) if stopped else failure)
        if failure is exc:
            raise
        raise failure from exc
    elapsed = (time.monotonic() - started) * 1000
    if result.elapsed_ms is None:
        result = result.model_copy(update={"elapsed_ms": elapsed})
    await emit(event(TOOL_COMPLETED, elapsed_ms=result.elapsed_ms))
    return result
