"""Replacing and withdrawing tools in a registry, and the version runs follow."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import pytest

from durable_tools.tools import (
    TOOL_REPLACED,
    TOOL_WITHDRAWN,
    InvalidArguments,
    ToolContext,
    ToolEvent,
    ToolRegistrationError,
    ToolRegistry,
)
from durable_tools.tools._validation import schema_digest


def ctx(name: str) -> ToolContext:
    return ToolContext(tool_call_id="c1", tool_name=name)


def test_a_duplicate_is_refused_unless_replace_is_asked_and_says_how() -> None:
    registry = ToolRegistry()

    @registry.tool
    def greet(name: str) -> str:
        """Say hello."""
        return f"hello {name}"

    def greet_v2(name: str, loud: bool = False) -> str:
        """Say hello, maybe loudly."""
        return f"HELLO {name}" if loud else f"hi {name}"

    with pytest.raises(ToolRegistrationError, match="replace=True"):
        registry.register(greet_v2, name="greet")
    assert registry.get("greet").fn is greet

    before = registry.version()
    registry.register(greet_v2, name="greet", replace=True)
    assert registry.get("greet").fn is greet_v2
    assert registry.names() == ["greet"]
    assert "loud" in registry.get("greet").spec.input_schema["properties"]
    assert registry.version() != before


def test_replacing_emits_an_event_and_a_log_naming_what_changed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = ToolRegistry()
    seen: list[ToolEvent] = []
    registry.on(TOOL_REPLACED, seen.append)
    registry.register_schema(
        lambda arguments, ctx: "a", input_schema={"type": "object"}, name="t", description="one"
    )
    with caplog.at_level(logging.INFO, logger="durable_tools.tools"):
        registry.register_schema(
            lambda arguments, ctx: "b",
            input_schema={"type": "object", "properties": {"x": {"type": "string"}}},
            name="t",
            description="one",
            replace=True,
        )
    assert len(seen) == 1 and seen[0].name == TOOL_REPLACED and seen[0].tool_name == "t"
    assert seen[0].details["changed"] == ["input_schema", "function"]
    assert "tool t replaced (input_schema, function)" in caplog.text


async def test_an_async_listener_of_a_replacement_runs_on_the_running_loop() -> None:
    registry = ToolRegistry()
    heard = asyncio.Event()

    async def listener(event: ToolEvent) -> None:
        heard.set()

    registry.on(TOOL_REPLACED, listener)
    registry.register_schema(lambda arguments, ctx: 1, input_schema={"type": "object"}, name="t")
    registry.register_schema(
        lambda arguments, ctx: 2, input_schema={"type": "object"}, name="t", replace=True
    )
    await asyncio.wait_for(heard.wait(), 5)


def test_a_replacement_brings_its_own_aliases_and_cannot_take_anothers() -> None:
    registry = ToolRegistry()
    registry.register_schema(
        lambda arguments, ctx: 1,
        input_schema={"type": "object"},
        name="first",
        aliases={"openai": "first_alias"},
    )
    registry.register_schema(
        lambda arguments, ctx: 2,
        input_schema={"type": "object"},
        name="second",
        aliases={"openai": "second_alias"},
    )
    # Its old alias is given up; a new one may not be another tool's.
    registry.register_schema(
        lambda arguments, ctx: 3,
        input_schema={"type": "object"},
        name="first",
        aliases={"openai": "renamed"},
        replace=True,
    )
    assert registry.get("renamed", provider="openai").name == "first"
    with pytest.raises(Exception, match="no tool named"):
        registry.get("first_alias", provider="openai")
    with pytest.raises(ToolRegistrationError, match="already uses it"):
        registry.register_schema(
            lambda arguments, ctx: 4,
            input_schema={"type": "object"},
            name="first",
            aliases={"openai": "second_alias"},
            replace=True,
        )
    assert registry.get("renamed", provider="openai").name == "first"  # unchanged


def test_a_withdrawn_tool_leaves_catalogs_until_registered_again() -> None:
    registry = ToolRegistry()
    withdrawn: list[ToolEvent] = []
    registry.on(TOOL_WITHDRAWN, withdrawn.append)
    registry.register_schema(lambda arguments, ctx: 1, input_schema={"type": "object"}, name="t")
    version = registry.version()
    assert registry.withdraw("t", reason="gone for now") is True
    assert registry.withdraw("t") is False  # once
    assert [e.message for e in withdrawn] == ["tool 't' gone for now"]
    assert "t" in registry and registry.is_withdrawn("t")
    assert registry.catalog() == []
    assert registry.version() != version
    registry.register_schema(
        lambda arguments, ctx: 1, input_schema={"type": "object"}, name="t", replace=True
    )
    assert [s.name for s in registry.catalog()] == ["t"] and not registry.is_withdrawn("t")
    assert registry.version() == version  # the same tools: the same version


def test_two_registries_with_the_same_tools_have_the_same_version() -> None:
    def build() -> ToolRegistry:
        registry = ToolRegistry()
        for name in ("b", "a"):
            registry.register_schema(
                lambda arguments, ctx: 1, input_schema={"type": "object"}, name=name
            )
        return registry

    assert build().version() == build().version()


async def test_approved_arguments_run_unchecked_only_under_another_schema() -> None:
    got: list[dict[str, Any]] = []
    old = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    new = {"type": "object", "properties": {"b": {"type": "string"}}, "required": ["b"]}
    registry = ToolRegistry()
    registry.register_schema(
        lambda arguments, ctx: got.append(arguments), input_schema=new, name="t"
    )
    # Approved under the old schema: runs with what the approver saw.
    await registry.invoke("t", {"a": "x"}, ctx("t"), bound_schema=schema_digest(old))
    assert got == [{"a": "x"}]
    # Approved under the schema the tool has: checked as always (fail closed).
    with pytest.raises(InvalidArguments):
        await registry.invoke("t", {"a": "x"}, ctx("t"), bound_schema=schema_digest(new))
    with pytest.raises(InvalidArguments):
        await registry.invoke("t", {"a": "x"}, ctx("t"))


def test_thousands_of_replacements_from_threads_leave_one_consistent_registry() -> None:
    registry = ToolRegistry()
    names = [f"tool_{i}" for i in range(2_000)]
    for name in names:
        registry.register_schema(
            lambda arguments, ctx: 0, input_schema={"type": "object"}, name=name
        )
    first = registry.version()

    def replace_all(tag: str) -> None:
        for name in names[:500]:  # both threads the same tools
            registry.register_schema(
                lambda arguments, ctx: 0,
                input_schema={"type": "object"},
                name=name,
                description=tag,
                replace=True,
            )
            registry.version()  # readers interleave with writers

    threads = [threading.Thread(target=replace_all, args=(f"v{i}",)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert registry.names() == names
    assert len(registry.catalog()) == 2_000
    assert registry.version() != first
    # The version kept up at each change is the one the tools now give.
    rebuilt = ToolRegistry()
    for tool in registry.tools():
        rebuilt.register_schema(
            tool.fn,
            input_schema=tool.spec.input_schema,
            name=tool.name,
            description=tool.spec.description,
        )
    assert rebuilt.version() == registry.version()
