"""Running tools through the registry: validation, injection, sync/async, results, errors."""

from __future__ import annotations

import asyncio
import threading
from typing import Annotated, Any

import pytest
from pydantic import BaseModel

from durable_tools import (
    ContentBlock,
    Denied,
    Injected,
    InvalidArguments,
    ToolContext,
    ToolExecutionError,
    ToolNotFound,
    ToolRegistry,
    ToolResult,
    ToolTimeout,
)
from durable_tools.tools import (
    TOOL_COMPLETED,
    TOOL_FAILED,
    TOOL_INVALID_ARGS,
    TOOL_STARTED,
    ToolEvent,
)
from durable_tools.tools._validation import safety_digest


class Order(BaseModel):
    item: str
    quantity: int = 1


class Receipt(BaseModel):
    order_id: str
    total: float


def context(**overrides: Any) -> ToolContext:
    base: dict[str, Any] = {"tool_call_id": "call_1", "tool_name": "t", "run_id": "run-1"}
    return ToolContext(**{**base, **overrides})


async def test_async_tool_receives_typed_arguments_and_context() -> None:
    registry = ToolRegistry()
    seen: dict[str, Any] = {}

    @registry.tool
    async def forecast(city: str, ctx: ToolContext, days: int = 2) -> Receipt:
        """Forecast."""
        seen.update(city=city, days=days, key=ctx.idempotency_key)
        return Receipt(order_id=city, total=days)

    result = await registry.invoke(
        "forecast", '{"city": "Oslo"}', context(idempotency_key="run-1/call_1")
    )
    assert seen == {"city": "Oslo", "days": 2, "key": "run-1/call_1"}
    assert result.structured == {"order_id": "Oslo", "total": 2.0}
    assert result.content[0].type == "json"
    assert result.content[0].text == '{"order_id": "Oslo", "total": 2.0}'
    assert result.elapsed_ms is not None and result.elapsed_ms >= 0


async def test_sync_tool_runs_in_a_thread_without_blocking_the_loop() -> None:
    registry = ToolRegistry()
    release = threading.Event()
    threads: list[str] = []

    @registry.tool
    def blocking(x: int) -> int:
        """Blocks until released."""
        threads.append(threading.current_thread().name)
        assert release.wait(5)
        return x * 2

    task = asyncio.create_task(registry.invoke("blocking", {"x": 21}, context()))
    await asyncio.sleep(0.05)
    assert not task.done()  # the loop is free while the sync tool waits
    release.set()
    result = await task
    assert result.structured == 42
    assert threads and threads[0] != threading.main_thread().name


async def test_pydantic_model_argument_receives_the_instance() -> None:
    registry = ToolRegistry()

    @registry.tool
    def place_order(order: Order) -> str:
        """Place an order."""
        assert isinstance(order, Order)
        return f"{order.quantity} x {order.item}"

    result = await registry.invoke("place_order", {"item": "pen"}, context())
    assert result.content == [ContentBlock(type="text", text="1 x pen")]
    assert result.structured is None


async def test_injected_resources_and_secrets_come_from_the_worker_only() -> None:
    registry = ToolRegistry()

    @registry.tool
    def call_api(
        path: str,
        client: Annotated[dict[str, str], Injected("http")],
        token: Annotated[str, Injected("api_token", secret=True)],
    ) -> str:
        """Call the API."""
        return f"{client['base']}{path} with {token}"

    ctx = context(resources={"http": {"base": "https://x"}}, secrets={"api_token": "s3cret"})
    result = await registry.invoke("call_api", {"path": "/a"}, ctx)
    assert result.content[0].text == "https://x/a with s3cret"

    # A model that tries to set an injected parameter is rejected, never obeyed.
    with pytest.raises(InvalidArguments) as caught:
        await registry.invoke("call_api", {"path": "/a", "token": "evil"}, ctx)
    assert caught.value.errors == [
        "$: 'token' is not an argument the model may set (allowed: path)"
    ]


async def test_missing_resource_is_a_non_retryable_error_naming_it() -> None:
    registry = ToolRegistry()

    @registry.tool
    def needs_db(q: str, db: Annotated[object, Injected()]) -> str:
        """Query."""
        return q

    @registry.tool
    def optional_cache(q: str, cache: Annotated[object | None, Injected("cache")] = None) -> str:
        """Uses a cache if the worker has one."""
        return f"{q}:{cache}"

    with pytest.raises(ToolExecutionError) as caught:
        await registry.invoke("needs_db", {"q": "x"}, context())
    assert not caught.value.retryable
    assert "resource named 'db'" in caught.value.message
    result = await registry.invoke("optional_cache", {"q": "x"}, context())
    assert result.content[0].text == "x:None"


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ('{"city": ', "not valid JSON"),
        ("", "empty"),
        ({"city": 3}, "$.city: 3 is not of type 'string'"),
        ({"city": "x", "extra": 1}, "'extra' is not an argument the model may set"),
        ({}, "'city' is a required property"),
    ],
)
async def test_invalid_arguments_never_reach_the_tool(arguments: Any, fragment: str) -> None:
    registry = ToolRegistry()
    calls: list[str] = []
    events: list[ToolEvent] = []
    registry.on("*", events.append)

    @registry.tool
    def weather(city: str) -> str:
        """Weather."""
        calls.append(city)
        return city

    with pytest.raises(InvalidArguments) as caught:
        await registry.invoke("weather", arguments, context())
    assert fragment in caught.value.message or any(fragment in e for e in caught.value.errors)
    assert calls == []
    assert [e.name for e in events] == [TOOL_INVALID_ARGS]
    assert events[0].details["errors"] == caught.value.errors


async def test_unknown_tool() -> None:
    with pytest.raises(ToolNotFound):
        await ToolRegistry().invoke("nope", {}, context())


async def test_strict_tool_nulls_mean_defaults() -> None:
    registry = ToolRegistry()

    @registry.tool(strict=True)
    def search(query: str, limit: int = 10, lang: str | None = "en") -> dict[str, Any]:
        """Search."""
        return {"query": query, "limit": limit, "lang": lang}

    result = await registry.invoke("search", {"query": "q", "limit": None, "lang": None}, context())
    assert result.structured == {"query": "q", "limit": 10, "lang": None}
    with pytest.raises(InvalidArguments):  # strict: every property must be present
        await registry.invoke("search", {"query": "q"}, context())


async def test_failures_are_classified_and_reported() -> None:
    registry = ToolRegistry()
    events: list[ToolEvent] = []
    registry.on(TOOL_FAILED, events.append)

    @registry.tool
    async def slow() -> str:
        """Slow."""
        raise TimeoutError("upstream took too long")

    @registry.tool
    def refuse() -> str:
        """Refuse."""
        raise Denied("policy says no")

    with pytest.raises(ToolTimeout) as caught:
        await registry.invoke("slow", "{}", context())
    assert caught.value.retryable
    assert isinstance(caught.value.__cause__, TimeoutError)
    with pytest.raises(Denied):
        await registry.invoke("refuse", {}, context())
    assert [(e.tool_name, e.error_kind) for e in events] == [
        ("slow", "ToolTimeout"),
        ("refuse", "Denied"),
    ]
    assert events[0].details["retryable"] is True and events[0].call_id == "call_1"


async def test_lifecycle_events_in_order_with_async_and_sync_listeners() -> None:
    registry = ToolRegistry()
    names: list[str] = []

    async def async_listener(event: ToolEvent) -> None:
        names.append(f"async:{event.name}")

    def broken_listener(event: ToolEvent) -> None:
        raise RuntimeError("observers never break calls")

    registry.on(TOOL_STARTED, lambda e: names.append(e.name))
    registry.on(TOOL_COMPLETED, async_listener)
    registry.on("*", broken_listener)

    @registry.tool
    def ok() -> str:
        """Ok."""
        return "fine"

    result = await registry.invoke("ok", {}, context())
    assert result.content[0].text == "fine"
    assert names == [TOOL_STARTED, f"async:{TOOL_COMPLETED}"]
    with pytest.raises(ValueError, match="unknown event name"):
        registry.on("started", lambda e: None)


async def test_return_values_become_tool_results() -> None:
    registry = ToolRegistry()
    given = ToolResult(content=[ContentBlock(text="as is")], is_error=True, elapsed_ms=5)

    @registry.tool
    def returns(kind: str) -> Any:
        """Return various things."""
        return {"str": "text", "none": None, "list": [1, "a"], "result": given}[kind]

    @registry.tool
    def unserialisable() -> Any:
        """Return an object JSON cannot hold."""
        return object()

    assert (await registry.invoke("returns", {"kind": "str"}, context())).content[0].text == "text"
    assert (await registry.invoke("returns", {"kind": "none"}, context())).content == []
    listed = await registry.invoke("returns", {"kind": "list"}, context())
    assert listed.structured == [1, "a"] and listed.content[0].text == '[1, "a"]'
    assert await registry.invoke("returns", {"kind": "result"}, context()) == given
    with pytest.raises(ToolExecutionError, match="cannot be converted to JSON") as caught:
        await registry.invoke("unserialisable", {}, context())
    assert not caught.value.retryable


async def test_output_is_validated_against_the_output_schema() -> None:
    registry = ToolRegistry()

    @registry.tool(output_schema={"type": "object", "required": ["t"]})
    def bad() -> dict[str, Any]:
        """Forgets t."""
        return {"x": 1}

    with pytest.raises(ToolExecutionError, match="breaks its output schema") as caught:
        await registry.invoke("bad", {}, context())
    assert not caught.value.retryable

    lenient = ToolRegistry(validate_outputs=False)
    lenient.register(bad)
    assert (await lenient.invoke("bad", {}, context())).structured == {"x": 1}


async def test_a_call_approved_for_another_tool_than_the_one_here_never_runs() -> None:
    ran: list[str] = []
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    def query(q: str) -> str:
        """Query."""
        ran.append(q)
        return q

    approved = safety_digest(registry.get("query").spec)
    await registry.invoke("query", {"q": "a"}, context(), bound_safety=approved)
    registry.register(query, replace=True, read_only=True, shell=True)
    with pytest.raises(Denied, match="changed since this call was approved") as refused:
        await registry.invoke("query", {"q": "b"}, context(), bound_safety=approved)
    assert not refused.value.retryable
    assert ran == ["a"]
