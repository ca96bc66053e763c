"""Hooks around a tool call: check, skip, or rewrite the result.

A middleware is any object with an optional `before(call)` and an optional
`after(call, result)`, sync or async, so a class, a module or a SimpleNamespace
works. Hooks run in registration order before the call and in reverse order after
it, like layers of an onion.

The contract (`ToolRegistry.invoke`): before-hooks run on a call's first attempt only.
Every attempt that got past them (the tool was started) ends in exactly one after-hook
round per middleware: with the tool's `ToolResult` when it succeeded, or with a
`ToolFailure` when it failed, was cancelled or timed out. A failure cannot be turned
into a result: what an after-hook returns for one is ignored, and an after-hook raising
on one is logged, never allowed to hide the failure.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ._context import ToolContext
from ._errors import Cancelled, ErrorKind, ToolError
from ._registered import RegisteredTool
from ._results import ContentBlock, ToolResult
from ._spec import ToolSpec

__all__ = [
    "Middleware",
    "Skip",
    "ToolCallInfo",
    "ToolFailure",
    "interruption",
    "run_after",
    "run_after_failure",
    "run_before",
]

log = logging.getLogger("durable_tools.tools")


@dataclass(frozen=True)
class Skip:
    """Returned by a before-hook: do not run the tool; the model reads `reason` instead."""

    reason: str


@dataclass(frozen=True)
class ToolCallInfo:
    """One call as hooks see it."""

    tool: RegisteredTool
    arguments: Mapping[str, Any]
    """The validated, model-visible arguments (never the injected values)."""
    context: ToolContext

    @property
    def spec(self) -> ToolSpec:
        """The tool's spec."""
        return self.tool.spec

    @property
    def name(self) -> str:
        """The tool's name."""
        return self.tool.spec.name


class ToolFailure(ToolResult):
    """What after-hooks receive when the attempt failed, was cancelled or timed out.

    A `ToolResult` (`is_error` is True, `content` holds the message) so that a hook written
    for results reads it safely; `isinstance(result, ToolFailure)` tells it apart. Its
    message is scrubbed of the call's secrets, as the `tool.failed` event's is.
    """

    is_error: bool = True
    error_kind: str = ErrorKind.EXECUTION.value
    """The `ErrorKind` value: `Cancelled` when the call was cancelled, `ToolTimeout` when
    the attempt timed out."""
    message: str = ""
    """What went wrong."""
    retryable: bool = False
    """Whether this error may be retried (the policy decides whether it is)."""

    @classmethod
    def of(cls, error: ToolError, message: str, elapsed_ms: float) -> ToolFailure:
        """The failure for a classified error whose (scrubbed) message is `message`."""
        return cls(
            content=[ContentBlock(type="text", text=message)],
            elapsed_ms=elapsed_ms,
            error_kind=error.kind.value,
            message=message,
            retryable=error.retryable,
        )


def interruption(context: ToolContext) -> ToolError:
    """The error an attempt stopped by a cancellation ends with: what the activity said
    when it cancelled the call (a timeout, a cancel), else a plain cancellation."""
    why = context._interruption
    if why is not None:
        return why
    return Cancelled(f"tool call {context.tool_call_id} ({context.tool_name}) was cancelled")


class Middleware(Protocol):
    """The shape of a middleware. Both methods are optional at run time."""

    def before(self, call: ToolCallInfo) -> Any:
        """Return None to go on, or a `Skip` to answer the model without running the tool."""

    def after(self, call: ToolCallInfo, result: Any) -> Any:
        """Return None to keep `result`, or a replacement `ToolResult`.

        `result` is a `ToolFailure` when the attempt failed, was cancelled or timed out;
        then the return value is ignored (a failure stays a failure).
        """


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


async def run_before(middlewares: tuple[object, ...], call: ToolCallInfo) -> Skip | None:
    """Run before-hooks in order; the first `Skip` stops the chain."""
    for middleware in middlewares:
        hook = getattr(middleware, "before", None)
        if hook is None:
            continue
        outcome = await _maybe_await(hook(call))
        if isinstance(outcome, Skip):
            return outcome
        if outcome is not None:
            raise TypeError(
                f"{type(middleware).__name__}.before returned {type(outcome).__name__}; "
                "expected None or Skip"
            )
    return None


async def run_after(middlewares: tuple[object, ...], call: ToolCallInfo, result: Any) -> Any:
    """Run after-hooks in reverse order, each may replace the result."""
    for middleware in reversed(middlewares):
        hook = getattr(middleware, "after", None)
        if hook is None:
            continue
        replaced = await _maybe_await(hook(call, result))
        if replaced is not None:
            result = replaced
    return result


async def run_after_failure(
    middlewares: tuple[object, ...], call: ToolCallInfo, failure: ToolFailure
) -> None:
    """Show a failed attempt to the after-hooks, in reverse order.

    They observe only: the failure is what the call ends with whatever they return or
    raise (a hook's own error is logged, and the next hook still runs).
    """
    for middleware in reversed(middlewares):
        hook = getattr(middleware, "after", None)
        if hook is None:
            continue
        try:
            replaced = await _maybe_await(hook(call, failure))
        except Exception:
            log.exception(
                "%s.after raised on the failure of tool %s call %s; the failure stands",
                type(middleware).__name__,
                call.name,
                call.context.tool_call_id,
            )
            continue
        if replaced is not None and replaced is not failure:
            log.warning(
                "%s.after returned a %s for the failure of tool %s call %s; ignored: an "
                "after-hook cannot turn a failure into a result",
                type(middleware).__name__,
                type(replaced).__name__,
                call.name,
                call.context.tool_call_id,
            )
