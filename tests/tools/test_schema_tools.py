"""Tools registered with a given JSON Schema (the base of MCP, OpenAPI and HTTP tools)."""

from __future__ import annotations

from typing import Any

import pytest

from durable_tools import InvalidArguments, ToolContext, ToolRegistrationError, ToolRegistry
from durable_tools.tools import SchemaTool

SCHEMA = {
    "type": "object",
    "properties": {"q": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
    "required": ["q"],
    "additionalProperties": False,
}


async def test_handler_gets_validated_arguments_and_context() -> None:
    registry = ToolRegistry()
    seen: list[tuple[dict[str, Any], str]] = []

    async def handler(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        seen.append((arguments, ctx.idempotency_key))
        return {"hits": arguments["limit"]}

    tool = registry.register_schema(
        handler, name="search_docs", input_schema=SCHEMA, description="Search.", read_only=True
    )
    assert isinstance(tool, SchemaTool)
    assert tool.spec.input_schema == SCHEMA and tool.spec.safety.read_only
    ctx = ToolContext(tool_call_id="c1", tool_name="search_docs", idempotency_key="wf/c1")
    result = await registry.invoke("search_docs", '{"q": "x", "limit": 3}', ctx)
    assert result.structured == {"hits": 3}
    assert seen == [({"q": "x", "limit": 3}, "wf/c1")]


async def test_given_schema_is_enforced_and_sync_handlers_work() -> None:
    registry = ToolRegistry()
    registry.register_schema(lambda arguments, ctx: "ok", name="echo", input_schema=SCHEMA)
    ctx = ToolContext(tool_call_id="c", tool_name="echo")
    with pytest.raises(InvalidArguments):
        await registry.invoke("echo", {"q": "x", "limit": 0}, ctx)
    with pytest.raises(InvalidArguments):
        await registry.invoke("echo", {"q": "x", "ctx": "smuggled"}, ctx)
    assert (await registry.invoke("echo", {"q": "x"}, ctx)).content[0].text == "ok"


def test_bad_schemas_are_rejected_at_registration() -> None:
    registry = ToolRegistry()
    with pytest.raises(ToolRegistrationError) as not_object:
        registry.register_schema(
            lambda arguments, ctx: None, name="a", input_schema={"type": "string"}
        )
    assert not_object.value.rule == "schema"
    with pytest.raises(ToolRegistrationError) as invalid:
        registry.register_schema(
            lambda arguments, ctx: None, name="b", input_schema={"type": "object", "required": 3}
        )
    assert invalid.value.rule == "schema"


def test_strict_schema_tools_are_made_strict() -> None:
    registry = ToolRegistry()
    tool = registry.register_schema(
        lambda arguments, ctx: None, name="s", input_schema=SCHEMA, strict=True
    )
    schema = tool.spec.input_schema
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == {"q", "limit"}
