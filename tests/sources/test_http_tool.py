"""Plain HTTP tools (no OpenAPI document) against the real pet-store server on 127.0.0.1."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from petstore_server import TOKEN, PetStore

from durable_tools import (
    InvalidArguments,
    ToolContext,
    ToolExecutionError,
    ToolRegistrationError,
    ToolRegistry,
    ToolTimeout,
)
from durable_tools.sources import BearerSecret, http_tool


def ctx(name: str, **kw: Any) -> ToolContext:
    return ToolContext(
        tool_call_id="c1",
        tool_name=name,
        idempotency_key="run-9/c1",
        secrets={"api_token": TOKEN},
        **kw,
    )


async def test_schema_inferred_from_the_url_template(petstore: PetStore):
    registry = ToolRegistry()
    tool = http_tool(
        registry,
        name="get_pet",
        method="GET",
        url_template=f"{petstore.base_url}/pets/{{pet_id}}",
        description="Get a pet by id.",
        auth=BearerSecret("api_token"),
        headers={"User-Agent": "durable-tools-test"},
    )
    assert tool.spec.input_schema == {
        "type": "object",
        "properties": {"pet_id": {"type": "string"}},
        "required": ["pet_id"],
        "additionalProperties": False,
    }
    assert tool.spec.safety.read_only and tool.spec.safety.networked
    result = await registry.invoke("get_pet", {"pet_id": "2"}, ctx("get_pet"))
    assert result.structured == {"id": 2, "name": "Tom"}
    sent = petstore.requests[-1]
    assert sent.path == "/pets/2" and sent.headers["user-agent"] == "durable-tools-test"
    assert sent.headers["authorization"] == f"Bearer {TOKEN}"
    with pytest.raises(InvalidArguments):
        await registry.invoke("get_pet", {"pet_id": ".."}, ctx("get_pet"))


async def test_arguments_go_to_the_query_or_the_json_body_by_method(petstore: PetStore):
    registry = ToolRegistry()
    schema = {
        "type": "object",
        "properties": {
            "q": {"type": "string"},
            "tags": {"type": "array"},
            "n": {"type": "integer"},
        },
        "required": ["q"],
    }
    url = f"{petstore.base_url}/echo"
    http_tool(registry, name="search", method="GET", url_template=url, input_schema=schema)
    http_tool(
        registry, name="submit", method="POST", url_template=url, input_schema=schema, query=["n"]
    )
    found = await registry.invoke("search", {"q": "a b", "tags": ["x", "y"], "flag": 1}, ctx("s"))
    assert found.structured["query"] == {"q": ["a b"], "tags": ["x", "y"]}
    posted = await registry.invoke("submit", {"q": "hi", "tags": ["x"], "n": 3}, ctx("p"))
    assert posted.structured == {
        "method": "POST",
        "query": {"n": ["3"]},
        "body": {"q": "hi", "tags": ["x"]},
    }
    assert petstore.requests[-1].headers["idempotency-key"] == "run-9/c1"
    spec = registry.get("submit").spec
    assert not spec.safety.read_only and not spec.safety.idempotent


async def test_a_body_property_is_the_body(petstore: PetStore):
    registry = ToolRegistry()
    http_tool(
        registry,
        name="put_echo",
        method="PUT",
        url_template=f"{petstore.base_url}/echo",
        input_schema={
            "type": "object",
            "properties": {"body": {"type": "array"}, "dry_run": {"type": "boolean"}},
        },
        approval=True,
    )
    result = await registry.invoke("put_echo", {"body": [1, 2], "dry_run": True}, ctx("e"))
    assert result.structured == {"method": "PUT", "query": {"dry_run": ["true"]}, "body": [1, 2]}
    spec = registry.get("put_echo").spec
    assert spec.approval == "always" and spec.safety.idempotent


async def test_503_retryable_with_retry_after_and_400_not(petstore: PetStore):
    registry = ToolRegistry()
    http_tool(registry, name="boom", method="GET", url_template=f"{petstore.base_url}/boom")
    http_tool(registry, name="broken", method="POST", url_template=f"{petstore.base_url}/broken")
    with pytest.raises(ToolExecutionError) as busy:
        await registry.invoke("boom", {}, ctx("boom"))
    assert busy.value.retryable and busy.value.retry_after == 2.0
    assert "HTTP 503" in busy.value.message and "overloaded" in busy.value.message
    with pytest.raises(ToolExecutionError) as refused:
        await registry.invoke("broken", {}, ctx("broken"))
    assert not refused.value.retryable and "dragon" in refused.value.message


async def test_long_error_bodies_are_bounded(petstore: PetStore):
    registry = ToolRegistry()
    http_tool(
        registry,
        name="nothing",
        method="GET",
        url_template=f"{petstore.base_url}/pets/{{pet_id}}",
        max_error_body=20,
    )
    with pytest.raises(ToolExecutionError) as missing:
        await registry.invoke("nothing", {"pet_id": "z" * 500}, ctx("n"))
    assert "more characters]" in missing.value.message
    assert len(missing.value.message) < 350


async def test_connection_refused_is_retryable_and_timeouts_follow_the_policy(petstore: PetStore):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    registry = ToolRegistry()
    http_tool(
        registry, name="down", method="POST", url_template=f"http://127.0.0.1:{closed_port}/x"
    )
    with pytest.raises(ToolExecutionError) as down:
        await registry.invoke("down", {}, ctx("down"))
    assert down.value.retryable and "could not connect" in down.value.message

    slow = f"{petstore.base_url}/slow?seconds=1"
    http_tool(
        registry, name="slow_get", method="GET", url_template=slow, start_to_close_timeout=0.2
    )
    http_tool(
        registry, name="slow_post", method="POST", url_template=slow, start_to_close_timeout=0.2
    )
    with pytest.raises(ToolTimeout) as safe:
        await registry.invoke("slow_get", {}, ctx("slow_get"))
    assert safe.value.retryable  # a GET may be repeated
    with pytest.raises(ToolTimeout) as unsafe:
        await registry.invoke("slow_post", {}, ctx("slow_post"))
    assert not unsafe.value.retryable  # a POST whose outcome is unknown is not
    http_tool(
        registry,
        name="slow_idempotent_post",
        method="POST",
        url_template=slow,
        start_to_close_timeout=0.2,
        idempotent=True,  # the API deduplicates by Idempotency-Key
    )
    with pytest.raises(ToolTimeout) as declared:
        await registry.invoke("slow_idempotent_post", {}, ctx("slow_idempotent_post"))
    assert declared.value.retryable


def test_registration_refuses_credential_arguments_and_unknown_placeholders():
    registry = ToolRegistry()
    with pytest.raises(ToolRegistrationError, match="credentials"):
        http_tool(
            registry,
            name="leaky",
            method="GET",
            url_template="http://127.0.0.1:1/x",
            input_schema={"type": "object", "properties": {"Authorization": {"type": "string"}}},
        )
    with pytest.raises(ToolRegistrationError, match="placeholders"):
        http_tool(
            registry,
            name="bad",
            method="GET",
            url_template="http://127.0.0.1:1/x/{id}",
            input_schema={"type": "object", "properties": {}},
        )
