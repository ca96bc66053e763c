"""Hooks around a tool call: check, skip, or rewrite the result.

A middleware is any object with an optional `before(call)` and an optional
`after(call, result)`, sync or async, so a class, a module or a SimpleNamespace
works. Hooks run in registration order before the call and in reverse order after
it, like layers of an onion.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ._context import ToolContext
from ._registered import RegisteredTool
from ._spec import ToolSpec

__all__ = ["Middleware", "Skip", "ToolCallInfo", "run_after", "run_before"]


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


class Middleware(Protocol):
    """The shape of a middleware. Both methods are optional at run time."""

    def before(self, call: ToolCallInfo) -> Any:
        """Return None to go on, or a `Skip` to answer the model without running the tool."""

    def after(self, call: ToolCallInfo, result: Any) -> Any:
        """Return None to keep `result`, or a replacement `ToolResult`."""


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
