"""The Pydantic AI bridge (`pydantic-ai:PROVIDER:MODEL`): Pydantic AI's Anthropic model class
and the official `anthropic` SDK under it, against a real HTTP server on 127.0.0.1 speaking
Anthropic's wire format. What is checked is what reaches the wire and what comes back."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from durable_tools import Message, ToolCall
from durable_tools.messages import (
    ModelRequest,
    ModelSettings,
    NamedToolChoice,
    OutputSchema,
    ToolDefinition,
)
from durable_tools.models import ModelError, PydanticAIModel, aclose_shared_clients, resolve_model
from fake_anthropic import (
    CannedResponse,
    FakeAnthropicServer,
    anthropic_error,
    message,
    text,
    tool_use,
)

API_KEY = "sk-ant-test-SENTINEL-0123456789"
SPEC = "pydantic-ai:anthropic:claude-test"


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
    yield
    await aclose_shared_clients()


def weather_tool() -> ToolDefinition:
    return ToolDefinition(
        name="weather",
        description="Current weather",
        parameters={"type": "object", "properties": {"city": {"type": "string"}}},
    )


def conversation() -> ModelRequest:
    return ModelRequest(
        model=SPEC,
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
            Message.tool("toolu_b", "weather", "unknown city", is_error=True),
        ],
        tools=[weather_tool(), ToolDefinition(name="forecast", description="Tomorrow")],
        settings=ModelSettings(
            temperature=0.2,
            max_output_tokens=300,
            stop=("END",),
            tool_choice=NamedToolChoice(name="weather"),
            extra={"top_k": 5},
        ),
    )


def simple() -> ModelRequest:
    return ModelRequest(model=SPEC, messages=[Message.user("hi")])


def test_resolves_to_the_bridge_with_the_pydantic_ai_model_name() -> None:
    model = resolve_model(SPEC)
    assert isinstance(model, PydanticAIModel)
    assert model.model == "anthropic:claude-test"
    with pytest.raises(ValueError, match=r"google-gla:gemini-2\.5-pro"):
        resolve_model("pydantic-ai:gemini")


async def test_conversation_tools_and_settings_on_the_wire(server: FakeAnthropicServer) -> None:
    server.add(
        message(
            text("Rome again."),
            tool_use("toolu_c", "weather", {"city": "Roma"}),
            input_tokens=100,
            cache_read_input_tokens=60,
            cache_creation_input_tokens=10,
        )
    )
    response = await resolve_model(SPEC).complete(conversation())
    [request] = server.requests
    body = request.json
    assert request.path.startswith("/v1/messages")
    assert API_KEY in (request.headers.get("x-api-key") or request.headers["authorization"])
    assert body["model"] == "claude-test"
    assert body["system"] == "You are terse."
    user, assistant, results = body["messages"]
    assert user == {
        "role": "user",
        "content": [{"type": "text", "text": "Weather in Paris and Rome?"}],
    }
    assert [b["type"] for b in assistant["content"]] == ["text", "tool_use", "tool_use"]
    assert assistant["content"][1]["input"] == {"city": "Paris"}
    # Parallel results in one user message, the failed one flagged as an error.
    assert [(b["tool_use_id"], b["is_error"]) for b in results["content"]] == [
        ("toolu_a", False),
        ("toolu_b", True),
    ]
    assert [tool["name"] for tool in body["tools"]] == ["weather", "forecast"]
    assert body["tools"][0]["input_schema"]["properties"] == {"city": {"type": "string"}}
    # Settings through Pydantic AI's names to Anthropic's.
    assert body["temperature"] == 0.2
    assert body["max_tokens"] == 300
    assert body["stop_sequences"] == ["END"]
    assert body["tool_choice"]["type"] == "tool" and body["tool_choice"]["name"] == "weather"
    assert body["top_k"] == 5
    # And the answer back in the run's shape.
    assert response.message.content == "Rome again."
    assert response.message.tool_calls == [
        ToolCall(id="toolu_c", name="weather", arguments='{"city": "Roma"}')
    ]
    assert response.finish_reason == "tool_calls"
    assert response.usage.input_tokens == 170  # cached input included, as for every adapter
    assert response.usage.cache_read_tokens == 60
    assert response.usage.cache_write_tokens == 10
    assert response.usage.output_tokens == 5


async def test_native_output_goes_as_output_config(server: FakeAnthropicServer) -> None:
    schema = OutputSchema.of(
        {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    )
    server.add(message(text('{"ok": true}')))
    # A model Pydantic AI knows has native output; a small max_tokens keeps the request
    # unstreamed (the fake server does not speak server-sent events).
    request = simple().model_copy(
        update={"output": schema, "settings": ModelSettings(max_output_tokens=1000)}
    )
    response = await resolve_model("pydantic-ai:anthropic:claude-sonnet-4-6").complete(request)
    sent = server.requests[0].json
    assert sent["output_config"]["format"]["type"] == "json_schema"
    assert sent["output_config"]["format"]["schema"]["properties"] == {"ok": {"type": "boolean"}}
    assert response.message.content == '{"ok": true}'


async def error_of(server: FakeAnthropicServer, answer: CannedResponse) -> ModelError:
    server.add(answer)
    with pytest.raises(ModelError) as caught:
        await resolve_model(SPEC).complete(simple())
    assert len(server.requests) == 1  # the SDK's own retries are off: Temporal retries
    return caught.value


async def test_rate_limit_retries_after_the_providers_delay(server: FakeAnthropicServer) -> None:
    error = await error_of(
        server,
        CannedResponse(429, anthropic_error("slow down", "rate_limit_error"), {"retry-after": "7"}),
    )
    assert error.retryable and error.retry_after == 7.0 and error.status == 429
    assert "rate limited" in error.message and "slow down" in error.message


async def test_overloaded_is_retried(server: FakeAnthropicServer) -> None:
    error = await error_of(server, CannedResponse(529, anthropic_error("busy", "overloaded_error")))
    assert error.retryable and error.status == 529


async def test_auth_error_fails_without_the_key(server: FakeAnthropicServer) -> None:
    body = anthropic_error(f"invalid x-api-key {API_KEY}", "authentication_error")
    error = await error_of(server, CannedResponse(401, body))
    assert not error.retryable and error.status == 401
    assert "authentication failed" in error.message
    assert API_KEY not in error.message and "***" in error.message


async def test_context_window_error_fails_the_run(server: FakeAnthropicServer) -> None:
    body = anthropic_error("prompt is too long: 250000 tokens > 200000 maximum")
    error = await error_of(server, CannedResponse(400, body))
    assert not error.retryable
    assert "context window" in error.message


async def test_connection_refused_is_retried(
    server: FakeAnthropicServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = server.base_url
    server.stop()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
    with pytest.raises(ModelError) as caught:
        await resolve_model(SPEC).complete(simple())
    assert caught.value.retryable
    assert "connection error" in caught.value.message


async def test_configuration_errors_fail_clearly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(ModelError) as caught:
        await resolve_model(SPEC).complete(simple())
    assert not caught.value.retryable
    assert "ANTHROPIC_API_KEY" in caught.value.message
    with pytest.raises(ModelError) as unknown:
        await resolve_model("pydantic-ai:no-such-provider:x").complete(simple())
    assert not unknown.value.retryable
    assert "configuration error" in unknown.value.message
