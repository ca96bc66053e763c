"""Before/after hooks: skip, replace, order, and errors."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from durable_tools import (
    ContentBlock,
    Denied,
    Skip,
    ToolContext,
    ToolError,
    ToolRegistry,
    ToolResult,
)
from durable_tools.tools import TOOL_COMPLETED, ToolCallInfo, ToolEvent


def ctx() -> ToolContext:
    return ToolContext(tool_call_id="c", tool_name="echo")


def make_registry(calls: list[str]) -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool
    def echo(text: str, secret: str = "") -> str:
        """Echo."""
        calls.append(text)
        return text

    return registry


async def test_before_hook_can_skip_the_call() -> None:
    calls: list[str] = []
    registry = make_registry(calls)
    seen: list[ToolCallInfo] = []

    async def before(call: ToolCallInfo) -> Skip | None:
        seen.append(call)
        return Skip("echo is disabled today") if call.arguments["text"] == "no" else None

    registry.use(SimpleNamespace(before=before))
    skipped = await registry.invoke("echo", {"text": "no"}, ctx())
    assert calls == []
    assert skipped.skipped == "echo is disabled today"
    assert skipped.content[0].text == "Tool call c to 'echo' was not run: echo is disabled today"
    assert skipped.is_error  # the model reads it as an error result
    ran = await registry.invoke("echo", {"text": "yes"}, ctx())
    assert calls == ["yes"] and ran.skipped is None
    assert seen[0].name == "echo" and seen[0].spec.name == "echo"


async def test_hooks_run_like_an_onion_and_after_can_replace_the_result() -> None:
    calls: list[str] = []
    registry = make_registry(calls)
    order: list[str] = []

    class Layer:
        def __init__(self, name: str) -> None:
            self.name = name

        def before(self, call: ToolCallInfo) -> None:
            order.append(f"before:{self.name}")

        def after(self, call: ToolCallInfo, result: ToolResult) -> ToolResult | None:
            order.append(f"after:{self.name}")
            if self.name == "outer":
                return ToolResult(content=[ContentBlock(text=result.content[0].text + "!")])
            return None

    registry.use(Layer("outer"))
    registry.use(Layer("inner"))
    result = await registry.invoke("echo", {"text": "hi"}, ctx())
    assert order == ["before:outer", "before:inner", "after:inner", "after:outer"]
    assert result.content[0].text == "hi!"


async def test_a_before_hook_raising_a_tool_error_propagates_it() -> None:
    calls: list[str] = []
    registry = make_registry(calls)

    def before(call: ToolCallInfo) -> None:
        raise Denied("blocked by policy")

    registry.use(SimpleNamespace(before=before))
    with pytest.raises(Denied, match="blocked by policy"):
        await registry.invoke("echo", {"text": "x"}, ctx())
    assert calls == []


async def test_bad_hook_results_and_bad_middleware_are_errors() -> None:
    registry = make_registry([])
    registry.use(SimpleNamespace(before=lambda call: "yes"))
    with pytest.raises(Exception, match="expected None or Skip"):
        await registry.invoke("echo", {"text": "x"}, ctx())
    with pytest.raises(TypeError, match="before"):
        registry.use(object())


async def test_middleware_on_event_receives_events() -> None:
    registry = make_registry([])
    got: list[Any] = []

    def on_event(event: ToolEvent) -> None:
        got.append(event.name)

    registry.use(SimpleNamespace(after=lambda call, result: None, on_event=on_event))
    await registry.invoke("echo", {"text": "x"}, ctx())
    assert got[-1] == TOOL_COMPLETED


async def test_a_skip_emits_skipped_and_neither_started_nor_completed() -> None:
    registry = make_registry([])
    seen: list[str] = []
    registry.on("*", lambda event: seen.append(event.name))
    registry.use(SimpleNamespace(before=lambda call: Skip("not today")))
    await registry.invoke("echo", {"text": "x"}, ctx())
    assert seen == ["tool.skipped"]


async def test_before_hooks_do_not_run_on_a_retry_attempt() -> None:
    calls: list[str] = []
    registry = make_registry(calls)
    hooks: list[str] = []
    registry.use(SimpleNamespace(before=lambda call: hooks.append(call.name)))
    assert registry.has_before_hooks
    await registry.invoke("echo", {"text": "a"}, ctx())
    await registry.invoke("echo", {"text": "b"}, ctx(), run_before_hooks=False)
    assert hooks == ["echo"] and calls == ["a", "b"]


async def test_a_failing_before_hook_is_final_so_no_retry_can_skip_it() -> None:
    registry = make_registry([])

    def before(call: ToolCallInfo) -> None:
        raise ConnectionError("policy service unreachable")  # retryable by kind

    registry.use(SimpleNamespace(before=before))
    with pytest.raises(ToolError) as caught:
        await registry.invoke("echo", {"text": "x"}, ctx())
    assert caught.value.retryable is False
