"""Lifecycle events of tool calls, for metrics, logs and UIs.

Each attempt that starts ends in exactly one `tool.completed` or `tool.failed`, also when
it is cancelled or times out (docs/events.md, "The worker's tool events and hooks").
Listeners observe; they never steer. A listener that raises is logged and ignored,
because an observer must not be able to fail a tool call. Events carry no argument
values, and their messages and details are scrubbed of the call's secrets (the worker's
secrets and the OAuth access token, in every form `scrub` knows) before any listener
sees them: listeners often forward to log pipelines and metrics backends.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Final

from ._scrub import scrub, scrub_value

__all__ = [
    "ALL_EVENTS",
    "REGISTRY_EVENTS",
    "TOOL_COMPLETED",
    "TOOL_FAILED",
    "TOOL_INVALID_ARGS",
    "TOOL_POLICY_EXHAUSTED",
    "TOOL_REPLACED",
    "TOOL_SKIPPED",
    "TOOL_STARTED",
    "TOOL_WITHDRAWN",
    "EventBus",
    "EventListener",
    "ToolEvent",
    "deliver",
    "scrub_event",
]

log = logging.getLogger("durable_tools.tools")

TOOL_STARTED: Final = "tool.started"
"""Arguments are valid and the tool function is about to run."""
TOOL_COMPLETED: Final = "tool.completed"
"""The tool returned."""
TOOL_SKIPPED: Final = "tool.skipped"
"""A before-hook skipped the call: the tool did not run (no started/completed events)."""
TOOL_FAILED: Final = "tool.failed"
"""The tool, a hook or argument injection raised, or the attempt was cancelled
(`error_kind` `Cancelled`) or stopped by its timeout (`ToolTimeout`); `error_kind` says how
it was classified."""
TOOL_INVALID_ARGS: Final = "tool.invalid_args"
"""The arguments were malformed or broke the schema; the tool did not run."""
TOOL_POLICY_EXHAUSTED: Final = "tool.policy_exhausted"
"""Retries or the call's time budget ran out: after the `tool.failed` of a retryable or
timed-out attempt that no attempt follows (emitted by the tool activity; the run records
its own in its audit stream)."""

TOOL_REPLACED: Final = "tool.replaced"
"""The registry replaced a tool with a new registration of the same name (`replace=True`,
or an MCP server that changed the tool's schema): `details` says what changed. Not a call's
event: `call_id` is empty."""
TOOL_WITHDRAWN: Final = "tool.withdrawn"
"""The tool's source no longer offers it: hidden from catalogs from now on (a call from a
run that still lists it gets a tool error). Not a call's event."""

REGISTRY_EVENTS: Final = (TOOL_REPLACED, TOOL_WITHDRAWN)
"""Events about the registry's contents rather than one call."""

ALL_EVENTS: Final = (
    TOOL_STARTED,
    TOOL_COMPLETED,
    TOOL_FAILED,
    TOOL_INVALID_ARGS,
    TOOL_POLICY_EXHAUSTED,
    TOOL_SKIPPED,
)


@dataclass(frozen=True)
class ToolEvent:
    """Something that happened to one tool call.

    Holds no argument values; the registry scrubs secrets from `message` and `details`
    (`scrub_event`) before emitting it.
    """

    name: str
    """One of the `tool.*` constants."""
    tool_name: str
    call_id: str = ""
    run_id: str = ""
    attempt: int = 1
    elapsed_ms: float | None = None
    error_kind: str | None = None
    """The `ErrorKind` value, for failures."""
    message: str | None = None
    """The error message, or the skip reason."""
    details: dict[str, Any] = field(default_factory=dict)


def scrub_event(event: ToolEvent, secrets: Iterable[str]) -> ToolEvent:
    """`event` with every form of the given secret values scrubbed from its message and
    details (exception text often quotes a URL with a key in it, or a token)."""
    found = frozenset(secrets)
    if not found:
        return event
    message = scrub(event.message, found) if event.message is not None else None
    return replace(event, message=message, details=scrub_value(event.details, found))


EventListener = Callable[[ToolEvent], Awaitable[None] | None]
"""A sync or async callable taking a `ToolEvent`."""


class EventBus:
    """Listeners by event name; `*` listens to every event."""

    def __init__(self) -> None:
        self._listeners: dict[str, tuple[EventListener, ...]] = {}
        self._lock = threading.Lock()
        self._pending: set[asyncio.Task[None]] = set()

    def on(self, event: str, listener: EventListener) -> EventListener:
        """Call `listener` for each event named `event` (or every event, for `*`).

        Returns:
            The listener, so `on` can be used as a decorator's body.
        """
        if event != "*" and not event.startswith("tool."):
            raise ValueError(f"unknown event name {event!r}; use one of {ALL_EVENTS} or '*'")
        with self._lock:
            self._listeners[event] = (*self._listeners.get(event, ()), listener)
        return listener

    def off(self, event: str, listener: EventListener) -> None:
        """Stop calling `listener` for `event`."""
        with self._lock:
            self._listeners[event] = tuple(
                x for x in self._listeners.get(event, ()) if x is not listener
            )

    def emit_now(self, event: ToolEvent) -> None:
        """Deliver `event` from synchronous code (a registration): a sync listener runs now;
        an async one runs as a task on the running event loop, or to its end when no loop
        runs (registrations at start-up)."""
        listeners = self._listeners.get(event.name, ()) + self._listeners.get("*", ())
        for listener in listeners:
            try:
                outcome = listener(event)
            except Exception:
                log.exception("listener %r failed on %s", listener, event.name)
                continue
            if not inspect.isawaitable(outcome):
                continue
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                asyncio.run(_awaited(listener, event, outcome))
                continue
            task = loop.create_task(_awaited(listener, event, outcome))
            self._pending.add(task)  # keep a reference until it ends
            task.add_done_callback(self._pending.discard)

    async def emit(self, event: ToolEvent) -> None:
        """Deliver `event` to its listeners, in registration order."""
        listeners = self._listeners.get(event.name, ()) + self._listeners.get("*", ())
        for listener in listeners:
            await deliver(listener, event)


async def _awaited(listener: EventListener, event: ToolEvent, outcome: Awaitable[None]) -> None:
    try:
        await outcome
    except Exception:
        log.exception("listener %r failed on %s", listener, event.name)


async def deliver(listener: EventListener, event: ToolEvent) -> None:
    """Call one listener, awaiting it if async; its failure is logged, never raised."""
    try:
        outcome = listener(event)
        if inspect.isawaitable(outcome):
            await outcome
    except Exception:
        log.exception("listener %r failed on %s", listener, event.name)
