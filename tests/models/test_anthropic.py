"""The Anthropic adapter, through the official SDK, against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta

import pytest

from durable_tools import Message, ToolCall
from durable_tools.messages import ModelRequest, ToolDefinition
from durable_tools.models import AnthropicModel, ModelError, aclose_shared_clients, resolve_model
from fake_anthropic import (
    CannedResponse,
    FakeAnthropicServer,
    anthropic_error,
    message,
    text,
    tool_use,
)

API_KEY = "sk-ant-test-SENTINEL-0123456789"


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as fake:
        yield fake


@pytest.fixture(autouse=True)
async def anthropic_env(
    server: FakeAnthropicServer, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[None]:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    for name in ("ANTHROPIC_TIMEOUT", "ANTHROPIC_MAX_TOKENS", "ANTHROPIC_PROMPT_CACHE"):
        monkeypatch.delenv(name, raising=False)
    yield
    await aclose_shared_clients()


def conversation_request() -> ModelRequest:
    return ModelRequest(
        model="anthropic:claude-test",
        messages=[
            Message.system("You are terse."),
            Message.user("Weather in Paris and Rome?"),
            Message(
                role="assistant",
                content="Checking both.",
                tool_calls=[
                    ToolCall(id="toolu_a", name="weather", arguments='{"city":"Paris"}'),
                    ToolCall(id="toolu_b", name="weather", arguments='{"city":"Rome"}'),
                ],
            ),
            Message.tool("toolu_a", "weather", "18C, cloudy"),
            Message.tool("toolu_b", "weather", "24C, sunny"),
            Message.user("Keep it short."),
            Message(role="assistant", content="Paris 18C, Rome 24C."),
            Message.user("And tomorrow?"),
        ],
        tools=[
            ToolDefinition(
                name="weather",
                description="Current weather",
                parameters={"type": "object", "properties": {"city": {"type": "string"}}},
            ),
            ToolDefinition(name="forecast", description="Tomorrow", strict=True),
        ],
    )


def simple_request() -> ModelRequest:
    return ModelRequest(model="anthropic:claude-test", messages=[Message.user("hi")])


async def error_of() -> ModelError:
    with pytest.raises(ModelError) as caught:
        await resolve_model("anthropic:claude-test").complete(simple_request())
    error = caught.value
    for shown in (str(error), repr(error), error.message, json.dumps(error.details[0])):
        assert API_KEY not in shown
    return error


async def test_request_body_and_headers(server: FakeAnthropicServer) -> None:
    server.add(message(text("ok")))
    await resolve_model("anthropic:claude-test").complete(conversation_request())

    [sent] = server.requests
    assert (sent.method, sent.path) == ("POST", "/v1/messages")
    # The SDK decides the header (`x-api-key` or, since 2.x, a Bearer token).
    bearer = sent.headers.get("authorization", "").removeprefix("Bearer ")
    assert API_KEY in (sent.headers.get("x-api-key"), bearer)
    assert sent.headers["anthropic-version"]
    assert sent.headers["x-stainless-retry-count"] == "0"
    assert sent.json == {
        "model": "claude-test",
        "max_tokens": 4096,
        "system": "You are terse.",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Weather in Paris and Rome?"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Checking both."},
                    {
                        "type": "tool_use",
                        "id": "toolu_a",
                        "name": "weather",
                        "input": {"city": "Paris"},
                    },
                    {
                        "type": "tool_use",
                        "id": "toolu_b",
                        "name": "weather",
                        "input": {"city": "Rome"},
                    },
                ],
            },
            {
                # Both results in one user message, before the user's next words.
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_a", "content": "18C, cloudy"},
                    {"type": "tool_result", "tool_use_id": "toolu_b", "content": "24C, sunny"},
                    {"type": "text", "text": "Keep it short."},
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "Paris 18C, Rome 24C."}]},
            {"role": "user", "content": [{"type": "text", "text": "And tomorrow?"}]},
        ],
        "tools": [
            {
                "name": "weather",
                "description": "Current weather",
                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
            {
                "name": "forecast",
                "description": "Tomorrow",
                "input_schema": {"type": "object"},
                "strict": True,
            },
        ],
    }


async def test_an_error_result_is_flagged_and_unknown_fields_stay_home(
    server: FakeAnthropicServer,
) -> None:
    server.add(message(text("ok")))
    failed = Message.tool("toolu_a", "weather", "error: city unknown")
    object.__setattr__(failed, "is_error", True)  # the optional field, when the run sets it
    request = ModelRequest(
        model="anthropic:claude-test",
        messages=[
            Message.user("go"),
            Message(role="assistant", tool_calls=[ToolCall(id="toolu_a", name="weather")]),
            failed,
        ],
    )
    await resolve_model("anthropic:claude-test").complete(request)
    [result] = server.requests[0].json["messages"][2]["content"]
    assert result == {
        "type": "tool_result",
        "tool_use_id": "toolu_a",
        "content": "error: city unknown",
        "is_error": True,
    }


async def test_parallel_tool_calls_split_across_blocks(server: FakeAnthropicServer) -> None:
    server.add(
        message(
            text("Let me check "),
            tool_use("toolu_1", "weather", {"city": "Paris"}),
            text("both."),
            tool_use("toolu_2", "weather", {"city": "Rome", "days": [1, 2]}),
            {"type": "thinking", "thinking": "...", "signature": "sig"},
            input_tokens=30,
            output_tokens=12,
            cache_creation_input_tokens=100,
            cache_read_input_tokens=2000,
        )
    )
    response = await resolve_model("anthropic:claude-test").complete(simple_request())
    assert response.message.content == "Let me check both."
    assert [(c.id, c.name, json.loads(c.arguments)) for c in response.message.tool_calls] == [
        ("toolu_1", "weather", {"city": "Paris"}),
        ("toolu_2", "weather", {"city": "Rome", "days": [1, 2]}),
    ]
    assert response.finish_reason == "tool_use"
    usage = response.usage
    assert (usage.input_tokens, usage.output_tokens) == (2130, 12)
    assert (usage.cache_read_tokens, usage.cache_write_tokens) == (2000, 100)


async def test_text_answer_and_stop_reason(server: FakeAnthropicServer) -> None:
    server.add(message(text("Sunny."), stop_reason="max_tokens"))
    response = await resolve_model("anthropic:claude-test").complete(simple_request())
    assert response.message.content == "Sunny."
    assert response.message.tool_calls == []
    assert response.finish_reason == "max_tokens"


async def test_settings_from_the_environment(
    server: FakeAnthropicServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_MAX_TOKENS", "512")
    monkeypatch.setenv("ANTHROPIC_PROMPT_CACHE", "1")
    server.add(message(text("ok")))
    await resolve_model("anthropic:claude-test").complete(simple_request())
    body = server.requests[0].json
    assert body["max_tokens"] == 512
    assert body["cache_control"] == {"type": "ephemeral"}


async def test_no_prompt_cache_by_default(server: FakeAnthropicServer) -> None:
    server.add(message(text("ok")))
    await resolve_model("anthropic:claude-test").complete(simple_request())
    assert "cache_control" not in server.requests[0].json


@pytest.mark.parametrize("status", [401, 403])
async def test_auth_errors_fail_with_a_clear_reason(
    server: FakeAnthropicServer, status: int
) -> None:
    server.add(
        CannedResponse(
            status, anthropic_error(f"invalid x-api-key {API_KEY}", "authentication_error")
        )
    )
    error = await error_of()
    assert not error.retryable and error.non_retryable
    assert error.status == status
    assert "authentication failed" in error.message
    assert "ANTHROPIC_API_KEY" in error.message
    assert "invalid x-api-key ***" in error.message


async def test_context_length_error_fails_with_a_clear_reason(server: FakeAnthropicServer) -> None:
    server.add(
        CannedResponse(400, anthropic_error("prompt is too long: 208310 tokens > 200000 maximum"))
    )
    error = await error_of()
    assert not error.retryable
    assert "exceeds the model's context window" in error.message
    assert "208310 tokens" in error.message


async def test_other_400_is_not_retryable(server: FakeAnthropicServer) -> None:
    server.add(CannedResponse(400, anthropic_error("tools.0.name: String should match pattern")))
    error = await error_of()
    assert not error.retryable
    assert "HTTP 400: tools.0.name" in error.message


@pytest.mark.parametrize(
    ("status", "kind"),
    [(429, "rate_limit_error"), (529, "overloaded_error"), (500, "api_error")],
)
async def test_rate_limit_overload_and_server_errors_retry_after_the_providers_delay(
    server: FakeAnthropicServer, status: int, kind: str
) -> None:
    server.add(CannedResponse(status, anthropic_error("Overloaded", kind), {"retry-after": "7"}))
    error = await error_of()
    assert error.retryable and not error.non_retryable
    assert error.status == status
    assert error.retry_after == 7.0
    assert error.next_retry_delay == timedelta(seconds=7)
    assert f"HTTP {status}: Overloaded" in error.message


async def test_no_client_side_retries(server: FakeAnthropicServer) -> None:
    server.add(
        CannedResponse(529, anthropic_error("Overloaded", "overloaded_error")), message(text("no"))
    )
    error = await error_of()
    assert error.retryable and error.retry_after is None
    assert len(server.requests) == 1


async def test_timeout_is_retryable(
    server: FakeAnthropicServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_TIMEOUT", "0.2")
    server.add(CannedResponse(body=message(text("late")), delay=1.0))
    error = await error_of()
    assert error.retryable
    assert "timed out after 0.2s" in error.message


async def test_missing_key_is_not_retryable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(ModelError) as caught:
        await resolve_model("anthropic:claude-test").complete(simple_request())
    assert not caught.value.retryable
    assert "ANTHROPIC_API_KEY" in caught.value.message


@pytest.mark.parametrize("body", ['{"content": [ oops', {"type": "message"}, {"content": [3]}])
async def test_a_body_that_is_not_a_message_is_not_retryable(
    server: FakeAnthropicServer, body: object
) -> None:
    server.add(CannedResponse(200, body))
    error = await error_of()
    assert not error.retryable
    assert "response is not" in error.message


async def test_connection_is_reused_across_adapters(server: FakeAnthropicServer) -> None:
    server.add(message(text("1")), message(text("2")))
    first = await resolve_model("anthropic:claude-test").complete(simple_request())
    second = await resolve_model("anthropic:claude-test").complete(simple_request())
    assert (first.message.content, second.message.content) == ("1", "2")
    assert server.requests[0].client_port == server.requests[1].client_port


def test_bad_settings_and_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_MAX_TOKENS", "lots")
    with pytest.raises(ValueError, match="ANTHROPIC_MAX_TOKENS"):
        resolve_model("anthropic:claude-test")
    monkeypatch.delenv("ANTHROPIC_MAX_TOKENS")
    model = resolve_model("anthropic:claude-test")
    assert isinstance(model, AnthropicModel)
    assert API_KEY not in repr(model)
    assert "api_key=set" in repr(model)
