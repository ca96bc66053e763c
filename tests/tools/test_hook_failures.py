"""After-hooks and listeners see every end of an attempt, once (registry.invoke alone)."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace

import pytest

from durable_tools import (
    ContentBlock,
    ToolContext,
    ToolError,
    ToolRegistry,
    ToolResult,
    ToolTimeout,
)
from durable_tools.tools import ToolCallInfo, ToolEvent, ToolFailure


def setup() -> tuple[ToolRegistry, list[str], list[ToolResult]]:
    registry = ToolRegistry()
    names: list[str] = []
    seen: list[ToolResult] = []
    registry.on("*", lambda event: names.append(event.name))

    @registry.tool
    async def work(mode: str, ctx: ToolContext) -> str:
        """Work, fail, or wait to be cancelled."""
        if mode == "fail":
            raise ConnectionError("down with key sk-12345678")
        if mode == "wait":
            await asyncio.Event().wait()
        return "ok"

    return registry, names, seen


def ctx() -> ToolContext:
    return ToolContext(tool_call_id="c", tool_name="work", secrets={"KEY": "sk-12345678"})


async def test_an_after_hook_raising_on_a_failure_is_logged_and_the_failure_stands(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry, names, seen = setup()

    def broken(call: ToolCallInfo, result: ToolResult) -> None:
        raise RuntimeError("hook bug")

    registry.use(SimpleNamespace(after=lambda call, result: seen.append(result)))
    registry.use(SimpleNamespace(after=broken))  # runs first (reverse order)
    with caplog.at_level(logging.ERROR), pytest.raises(ToolError) as raised:
        await registry.invoke("work", {"mode": "fail"}, ctx())
    assert "down" in raised.value.message
    assert names == ["tool.started", "tool.failed"]
    [failure] = seen  # the other hook still ran
    assert isinstance(failure, ToolFailure) and failure.retryable
    assert "sk-12345678" not in failure.message and "sk-12345678" not in str(failure.content)
    assert "hook bug" in caplog.text or "the failure stands" in caplog.text


async def test_a_failing_after_hook_on_a_result_ends_the_attempt_once() -> None:
    registry, names, _seen = setup()
    calls: list[ToolResult] = []

    def broken(call: ToolCallInfo, result: ToolResult) -> None:
        calls.append(result)
        raise ValueError("rejects every result")

    registry.use(SimpleNamespace(after=broken))
    with pytest.raises(ToolError):
        await registry.invoke("work", {"mode": "ok"}, ctx())
    assert names == ["tool.started", "tool.failed"]
    assert len(calls) == 1 and not isinstance(calls[0], ToolFailure)  # not shown again


async def test_a_cancelled_invoke_reports_its_interruption_once() -> None:
    registry, names, seen = setup()
    registry.use(SimpleNamespace(after=lambda call, result: seen.append(result)))
    context = ctx()
    events: list[ToolEvent] = []
    registry.on("tool.failed", events.append)
    task = asyncio.create_task(registry.invoke("work", {"mode": "wait"}, context))
    while "tool.started" not in names:
        await asyncio.sleep(0)
    context._cancel(ToolTimeout("the attempt timed out"))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert names == ["tool.started", "tool.failed"]
    assert events[0].error_kind == "ToolTimeout"
    [failure] = seen
    assert isinstance(failure, ToolFailure) and failure.error_kind == "ToolTimeout"


async def test_a_replacement_for_a_failure_is_ignored() -> None:
    registry, names, _seen = setup()
    registry.use(
        SimpleNamespace(after=lambda call, result: ToolResult(content=[ContentBlock(text="fine")]))
    )
    with pytest.raises(ToolError):
        await registry.invoke("work", {"mode": "fail"}, ctx())
    assert names == ["tool.started", "tool.failed"]
