"""Event names, emit API and the policy-exhausted event emitted by callers."""

from __future__ import annotations

from durable_tools import ToolRegistry
from durable_tools.tools import TOOL_POLICY_EXHAUSTED, ToolEvent
from durable_tools.tools._events import ALL_EVENTS, EventBus


def test_event_names_are_stable() -> None:
    assert ALL_EVENTS == (
        "tool.started",
        "tool.completed",
        "tool.failed",
        "tool.invalid_args",
        "tool.policy_exhausted",
        "tool.skipped",
    )


async def test_callers_emit_policy_exhausted() -> None:
    registry = ToolRegistry()
    got: list[ToolEvent] = []
    registry.on(TOOL_POLICY_EXHAUSTED, got.append)
    event = ToolEvent(name=TOOL_POLICY_EXHAUSTED, tool_name="t", call_id="c", attempt=5)
    await registry.emit(event)
    assert got == [event]


async def test_off_removes_a_listener() -> None:
    bus = EventBus()
    got: list[str] = []

    def listener(event: ToolEvent) -> None:
        got.append(event.name)

    bus.on("*", listener)
    await bus.emit(ToolEvent(name="tool.started", tool_name="t"))
    bus.off("*", listener)
    await bus.emit(ToolEvent(name="tool.started", tool_name="t"))
    assert got == ["tool.started"]
