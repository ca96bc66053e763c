"""The Responses API adapter (`openai-responses:MODEL`) against a real server on 127.0.0.1."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator, Iterator

import pytest

from durable_tools import Message, ToolCall
from durable_tools._extras import install_hint
from durable_tools.messages import ModelRequest, ToolDefinition
from durable_tools.models import (
    ModelError,
    OpenAIResponsesModel,
    aclose_shared_clients,
    resolve_model,
)
from fake_openai import CannedResponse, FakeOpenAIServer, error_body, responses_response

API_KEY = "sk-test-SENTINEL-responses"


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
    await aclose_shared_clients()


async def test_request_items_and_parsed_answer(server: FakeOpenAIServer) -> None:
    server.add(
        responses_response(
            "Checking.",
            [("call_1", "weather", '{"city":"Paris"}'), ("call_2", "weather", '{"city":"Rome"}')],
            input_tokens=40,
            output_tokens=9,
            cached_tokens=32,
        )
    )
    request = ModelRequest(
        model="openai-responses:gpt-test",
        messages=[
            Message.system("Be terse."),
            Message.user("Weather?"),
            Message(
                role="assistant",
                content="One moment.",
                tool_calls=[ToolCall(id="call_0", name="weather", arguments='{"city":"Oslo"}')],
            ),
            Message.tool("call_0", "weather", "3C"),
        ],
        tools=[ToolDefinition(name="weather", description="Current weather")],
    )
    response = await resolve_model("openai-responses:gpt-test").complete(request)

    [sent] = server.requests
    assert sent.path == "/v1/responses"
    assert sent.headers["authorization"] == f"Bearer {API_KEY}"
    assert sent.json == {
        "model": "gpt-test",
        "input": [
            {"role": "system", "content": "Be terse."},
            {"role": "user", "content": "Weather?"},
            {"role": "assistant", "content": "One moment."},
            {
                "type": "function_call",
                "call_id": "call_0",
                "name": "weather",
                "arguments": '{"city":"Oslo"}',
            },
            {"type": "function_call_output", "call_id": "call_0", "output": "3C"},
        ],
        "tools": [
            {
                "type": "function",
                "name": "weather",
                "description": "Current weather",
                "parameters": {"type": "object"},
                "strict": False,
            }
        ],
    }
    assert response.message.content == "Checking."
    assert [(c.id, c.arguments) for c in response.message.tool_calls] == [
        ("call_1", '{"city":"Paris"}'),
        ("call_2", '{"city":"Rome"}'),
    ]
    assert response.finish_reason == "tool_calls"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (40, 9)
    assert response.usage.cache_read_tokens == 32


async def test_errors_are_classified(server: FakeOpenAIServer) -> None:
    server.add(
        CannedResponse(429, error_body("slow down", "rate_limit_exceeded"), {"retry-after": "3"}),
        CannedResponse(
            400,
            error_body(
                "This model's maximum context length is 128000 tokens.", "invalid_request_error"
            ),
        ),
        CannedResponse(200, {"object": "response"}),
    )
    model = OpenAIResponsesModel("gpt-test")
    request = ModelRequest(model="openai-responses:gpt-test", messages=[Message.user("hi")])
    errors = []
    for _ in range(3):
        with pytest.raises(ModelError) as caught:
            await model.complete(request)
        errors.append(caught.value)
    rate, context, malformed = errors
    assert (rate.retryable, rate.retry_after) == (True, 3.0)
    assert not context.retryable and "context window" in context.message
    assert not malformed.retryable and "not a Responses API response" in malformed.message


def test_without_the_sdk_the_spec_fails_naming_the_extra() -> None:
    # The core stays importable without provider SDKs; using one names the extra to add.
    code = (
        "import sys; sys.modules['openai'] = None; sys.modules['anthropic'] = None\n"
        "import durable_tools, durable_tools.worker\n"
        "from durable_tools.models import resolve_model\n"
        "for spec in ('anthropic:x', 'openai:x', 'openai-responses:x'):\n"
        "    try:\n"
        "        resolve_model(spec)\n"
        "    except ValueError as e:\n"
        "        print(e)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"ANTHROPIC_API_KEY": "k", "PATH": ""},
    )
    assert done.returncode == 0, done.stderr
    # The command names the packages themselves: it works without a registry that has
    # durable-tools (which is installed from a checkout or a wheel).
    assert done.stdout.splitlines() == [
        f"the 'anthropic' package is not installed: {install_hint('anthropic')}",
        f"the 'openai' package is not installed: {install_hint('openai')}",
        f"the 'openai' package is not installed: {install_hint('openai')}",
    ]
    assert install_hint("openai").startswith("pip install 'openai")
