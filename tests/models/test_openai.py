"""The OpenAI-compatible adapter, against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import email.utils
import json
import socket
import time
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta

import httpx
import httpx2
import pytest

from durable_tools import Message, ToolCall
from durable_tools.messages import ModelRequest, ToolDefinition
from durable_tools.models import (
    ModelError,
    OpenAIChatModel,
    aclose_shared_clients,
    resolve_model,
)
from durable_tools.models._sdk import parse_retry_after
from fake_openai import (
    CannedResponse,
    FakeOpenAIServer,
    RecordedRequest,
    chat_completion,
    error_body,
    tool_call,
)

API_KEY = "sk-test-SENTINEL-0123456789abcdef"


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture(autouse=True)
async def openai_env(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[None]:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    monkeypatch.delenv("OPENAI_TIMEOUT", raising=False)
    yield
    # Each test's server has its own port, hence its own shared client: close them.
    await aclose_shared_clients()


def conversation_request() -> ModelRequest:
    return ModelRequest(
        model="openai:gpt-test",
        messages=[
            Message.system("You are terse."),
            Message.user("Weather in Paris?"),
            Message(
                role="assistant",
                content=None,
                tool_calls=[ToolCall(id="call_a", name="weather", arguments='{"city":"Paris"}')],
            ),
            Message.tool("call_a", "weather", "18C, cloudy"),
            Message(role="assistant", content="It is 18C."),
            Message.user("And tomorrow?"),
        ],
        tools=[
            ToolDefinition(
                name="weather",
                description="Current weather",
                parameters={
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                    "additionalProperties": False,
                },
                strict=True,
            ),
            ToolDefinition(name="forecast", description="Tomorrow"),
        ],
        turn=2,
    )


def simple_request(turn: int = 0) -> ModelRequest:
    return ModelRequest(model="openai:gpt-test", messages=[Message.user("hi")], turn=turn)


async def error_of(request: ModelRequest | None = None) -> ModelError:
    with pytest.raises(ModelError) as caught:
        await resolve_model("openai:gpt-test").complete(request or simple_request())
    error = caught.value
    for text in (str(error), repr(error), error.message, json.dumps(error.details[0])):
        assert API_KEY not in text
    return error


async def test_request_body_and_headers(server: FakeOpenAIServer) -> None:
    server.add(chat_completion(content="ok"))
    await resolve_model("openai:gpt-test").complete(conversation_request())

    [sent] = server.requests
    assert (sent.method, sent.path) == ("POST", "/v1/chat/completions")
    assert sent.headers["authorization"] == f"Bearer {API_KEY}"
    assert sent.headers["content-type"] == "application/json"
    assert sent.json == {
        "model": "gpt-test",
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "weather", "arguments": '{"city":"Paris"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_a", "content": "18C, cloudy"},
            {"role": "assistant", "content": "It is 18C."},
            {"role": "user", "content": "And tomorrow?"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "weather",
                    "description": "Current weather",
                    "parameters": {
                        "type": "object",
                        "properties": {"city": {"type": "string"}},
                        "required": ["city"],
                        "additionalProperties": False,
                    },
                    "strict": True,
                },
            },
            {
                # `strict` is left out when false: not every server knows it.
                "type": "function",
                "function": {
                    "name": "forecast",
                    "description": "Tomorrow",
                    "parameters": {"type": "object"},
                },
            },
        ],
    }


async def test_no_key_no_authorization_and_no_tools(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Local servers (vLLM, Ollama, llama.cpp) usually run without a key.
    monkeypatch.delenv("OPENAI_API_KEY")
    server.add(chat_completion(content="ok"))
    await resolve_model("openai:local").complete(simple_request())
    [sent] = server.requests
    assert "authorization" not in sent.headers
    assert "tools" not in sent.json


async def test_tool_call_response_keeps_raw_arguments(server: FakeOpenAIServer) -> None:
    raw = '{"city": "Paris", "unit": '  # truncated: validation must see it as is
    server.add(
        chat_completion(
            tool_calls=[tool_call("call_1", "weather", raw), tool_call("call_2", "forecast", "{}")],
            prompt_tokens=31,
            completion_tokens=7,
        )
    )
    response = await resolve_model("openai:gpt-test").complete(simple_request())
    assert response.message.role == "assistant"
    assert response.message.content is None
    assert [(c.id, c.name, c.arguments) for c in response.message.tool_calls] == [
        ("call_1", "weather", raw),
        ("call_2", "forecast", "{}"),
    ]
    assert response.finish_reason == "tool_calls"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (31, 7)


async def test_text_response(server: FakeOpenAIServer) -> None:
    server.add(chat_completion(content="Tomorrow: sunny.", prompt_tokens=3, completion_tokens=4))
    response = await resolve_model("openai:gpt-test").complete(simple_request())
    assert response.message.content == "Tomorrow: sunny."
    assert response.message.tool_calls == []
    assert response.finish_reason == "stop"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (3, 4)


async def test_lenient_parsing_of_compatible_servers(server: FakeOpenAIServer) -> None:
    # Seen from local servers: no ids, object arguments, no usage, content parts.
    server.add(
        {
            "choices": [
                {
                    "message": {
                        "role": "assistant",
                        "content": [
                            {"type": "text", "text": "Checking"},
                            {"type": "text", "text": "."},
                        ],
                        "tool_calls": [
                            {"type": "function", "function": {"name": "w", "arguments": {"a": 1}}}
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ]
        }
    )
    response = await resolve_model("openai:gpt-test").complete(simple_request(turn=4))
    assert response.message.content == "Checking."
    [call] = response.message.tool_calls
    assert call.id == "call_4_0"
    assert json.loads(call.arguments) == {"a": 1}
    assert (response.usage.input_tokens, response.usage.output_tokens) == (0, 0)


async def test_429_with_retry_after_seconds_is_retryable(server: FakeOpenAIServer) -> None:
    server.add(
        CannedResponse(
            429,
            error_body("Rate limit reached for gpt-test", "rate_limit_exceeded"),
            headers={"Retry-After": "7"},
        )
    )
    error = await error_of()
    assert error.retryable
    assert error.status == 429
    assert error.retry_after == 7.0
    assert "Rate limit reached for gpt-test" in error.message
    # Temporal waits as the provider asked, instead of its own backoff.
    assert not error.non_retryable
    assert error.next_retry_delay == timedelta(seconds=7)


async def test_429_with_retry_after_http_date(server: FakeOpenAIServer) -> None:
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    server.add(CannedResponse(429, error_body("slow down"), headers={"Retry-After": when}))
    error = await error_of()
    assert error.retryable
    assert error.retry_after is not None
    assert 25 <= error.retry_after <= 31


async def test_500_is_retryable(server: FakeOpenAIServer) -> None:
    server.add(CannedResponse(500, error_body("The server had an error", "server_error")))
    error = await error_of()
    assert error.retryable
    assert error.status == 500
    assert error.retry_after is None
    assert "The server had an error" in error.message


async def test_503_with_a_non_json_body(server: FakeOpenAIServer) -> None:
    server.add(CannedResponse(503, "<html>upstream unavailable</html>", {"Retry-After": "2"}))
    error = await error_of()
    assert error.retryable
    assert error.retry_after == 2.0
    assert "upstream unavailable" in error.message


async def test_400_is_not_retryable_and_carries_the_provider_message(
    server: FakeOpenAIServer,
) -> None:
    message = "Invalid schema for function 'weather': 'additionalProperties' is required"
    server.add(CannedResponse(400, error_body(message), headers={"Retry-After": "5"}))
    error = await error_of()
    assert not error.retryable
    assert error.non_retryable
    assert error.status == 400
    assert error.retry_after is None
    assert message in error.message
    assert "HTTP 400" in error.message


async def test_vllm_style_error_body(server: FakeOpenAIServer) -> None:
    server.add(CannedResponse(404, {"object": "error", "message": "model gpt-test not found"}))
    error = await error_of()
    assert not error.retryable
    assert "model gpt-test not found" in error.message


async def test_api_key_echoed_by_the_provider_is_redacted(server: FakeOpenAIServer) -> None:
    server.add(CannedResponse(401, error_body(f"Incorrect API key provided: {API_KEY}.")))
    error = await error_of()  # asserts the key is absent from str, repr and details
    assert not error.retryable
    assert "Incorrect API key provided: ***." in error.message
    assert API_KEY not in repr(resolve_model("openai:gpt-test"))


async def test_invalid_json_body_is_not_retryable(server: FakeOpenAIServer) -> None:
    server.add(CannedResponse(200, '{"choices": [ oops'))
    error = await error_of()
    assert not error.retryable
    assert "not valid JSON" in error.message


@pytest.mark.parametrize(
    "body",
    [
        {"object": "chat.completion"},
        {"choices": []},
        {"choices": [{"index": 0}]},
        [1, 2],
        {"choices": [{"message": {"content": 3}}]},
    ],
)
async def test_body_that_is_not_a_completion_is_not_retryable(
    server: FakeOpenAIServer, body: object
) -> None:
    server.add(CannedResponse(200, body))
    error = await error_of()
    assert not error.retryable
    assert "not a chat completion" in error.message


async def test_timeout_is_retryable(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_TIMEOUT", "0.2")
    server.add(CannedResponse(body=chat_completion(content="late"), delay=1.0))
    started = time.monotonic()
    error = await error_of()
    assert time.monotonic() - started < 0.9
    assert error.retryable
    assert "timed out after 0.2s" in error.message


async def test_connection_refused_is_retryable() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    model = OpenAIChatModel("gpt-test", base_url=f"http://127.0.0.1:{port}/v1", api_key=API_KEY)
    with pytest.raises(ModelError) as caught:
        await model.complete(simple_request())
    assert caught.value.retryable
    assert caught.value.status is None
    assert "connection error" in caught.value.message


async def test_base_url_without_scheme_is_not_retryable() -> None:
    model = OpenAIChatModel("gpt-test", base_url="localhost:1/v1", api_key=API_KEY)
    with pytest.raises(ModelError) as caught:
        await model.complete(simple_request())
    assert not caught.value.retryable


def test_bad_timeout_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="OPENAI_TIMEOUT"):
        resolve_model("openai:gpt-test")


async def test_one_request_per_call_on_a_reused_connection(server: FakeOpenAIServer) -> None:
    server.add(chat_completion(content="1"), chat_completion(content="2"))
    # A fresh adapter per call, as the activity builds them: the client is still shared.
    first = await resolve_model("openai:gpt-test").complete(simple_request())
    second = await resolve_model("openai:gpt-test").complete(simple_request())
    assert (first.message.content, second.message.content) == ("1", "2")
    assert len(server.requests) == 2
    assert server.requests[0].client_port == server.requests[1].client_port


async def test_no_client_side_retries(server: FakeOpenAIServer) -> None:
    server.add(CannedResponse(500, error_body("boom")), chat_completion(content="never"))
    await error_of()
    assert len(server.requests) == 1


async def test_constructor_arguments_and_a_custom_client() -> None:
    seen: list[RecordedRequest] = []

    def answer(request: RecordedRequest) -> dict[str, object]:
        seen.append(request)
        return chat_completion(content=request.json["model"])

    with FakeOpenAIServer(answer) as other:
        async with httpx2.AsyncClient() as client:
            model = OpenAIChatModel(
                "other-model", base_url=other.base_url + "/", api_key="k2", http_client=client
            )
            response = await model.complete(simple_request())
    assert response.message.content == "other-model"
    assert seen[0].headers["authorization"] == "Bearer k2"
    assert seen[0].path == "/v1/chat/completions"


def test_parse_retry_after() -> None:
    assert parse_retry_after(httpx.Headers({})) is None
    assert parse_retry_after(httpx.Headers({"Retry-After": "1.5"})) == 1.5
    assert parse_retry_after(httpx.Headers({"Retry-After": "-3"})) == 0.0
    assert parse_retry_after(httpx.Headers({"Retry-After": "whenever"})) is None
    both = httpx.Headers({"retry-after-ms": "250", "Retry-After": "1"})
    assert parse_retry_after(both) == 0.25
    date = httpx.Headers({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"})
    assert parse_retry_after(date, now=1445412470.0) == 10.0
    assert parse_retry_after(date, now=1445412490.0) == 0.0
