"""Each adapter's streamed answer is the answer `complete` gives for the same message.

The fake servers speak each provider's real SSE format (Chat Completions chunks with
`stream_options.include_usage`, Responses API events, Anthropic's message events), with
tool-call arguments split across chunks; the official SDK is the client.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator

import pytest

from durable_tools import Message
from durable_tools.messages import ModelRequest, ToolDefinition
from durable_tools.models import (
    AnthropicModel,
    ModelError,
    OpenAIChatModel,
    OpenAIResponsesModel,
    aclose_shared_clients,
)
from fake_anthropic import FakeAnthropicServer, message, message_stream, text, tool_use
from fake_openai import (
    CannedResponse,
    FakeOpenAIServer,
    chat_completion,
    chat_stream,
    responses_response,
    responses_stream,
    tool_call,
)

ARGS_P = json.dumps({"city": "Paris", "units": "metric"})
ARGS_R = json.dumps({"city": "Rome"})


def request() -> ModelRequest:
    return ModelRequest(
        model="x:y",
        messages=[Message.user("Weather in Paris and Rome?")],
        tools=[ToolDefinition(name="weather", parameters={"type": "object"})],
        turn=2,
    )


def split(value: str, parts: int = 4) -> list[str]:
    size = -(-len(value) // parts)
    return [value[i : i + size] for i in range(0, len(value), size)]


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture(autouse=True)
async def close_clients() -> AsyncIterator[None]:
    yield
    await aclose_shared_clients()


async def test_chat_completions_stream_matches_the_whole_answer(
    openai_server: FakeOpenAIServer,
) -> None:
    openai_server.add(
        chat_completion(
            "Checking both.",
            [tool_call("call_p", "weather", ARGS_P), tool_call("call_r", "weather", ARGS_R)],
            prompt_tokens=31,
            completion_tokens=17,
        ),
        CannedResponse(
            sse=chat_stream(
                ["Check", "ing ", "both."],
                [("call_p", "weather", split(ARGS_P)), ("call_r", "weather", split(ARGS_R))],
                prompt_tokens=31,
                completion_tokens=17,
            )
        ),
    )
    model = OpenAIChatModel("gpt-test", base_url=openai_server.base_url, api_key="k-test")
    whole = await model.complete(request())
    deltas: list[str] = []
    streamed = await model.stream(request(), deltas.append)
    assert streamed == whole
    assert deltas == ["Check", "ing ", "both."]
    assert streamed.usage.input_tokens == 31 and streamed.usage.output_tokens == 17
    assert [c.arguments for c in streamed.message.tool_calls] == [ARGS_P, ARGS_R]
    sent = openai_server.requests[1].json
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}


async def test_chat_completions_stream_of_a_plain_answer(openai_server: FakeOpenAIServer) -> None:
    openai_server.add(
        chat_completion("Paris 18C."), CannedResponse(sse=chat_stream(["Paris ", "18C."]))
    )
    model = OpenAIChatModel("gpt-test", base_url=openai_server.base_url, api_key="k-test")
    whole = await model.complete(request())
    streamed = await model.stream(request(), lambda _: None)
    assert streamed == whole and streamed.message.content == "Paris 18C."


async def test_responses_stream_matches_the_whole_answer(openai_server: FakeOpenAIServer) -> None:
    openai_server.add(
        responses_response("Checking.", [("call_p", "weather", ARGS_P)], output_tokens=9),
        CannedResponse(
            sse=responses_stream(
                ["Check", "ing."], [("call_p", "weather", split(ARGS_P))], output_tokens=9
            )
        ),
    )
    model = OpenAIResponsesModel("gpt-test", base_url=openai_server.base_url, api_key="k-test")
    whole = await model.complete(request())
    deltas: list[str] = []
    streamed = await model.stream(request(), deltas.append)
    assert streamed == whole
    assert deltas == ["Check", "ing."]
    assert streamed.message.tool_calls[0].arguments == ARGS_P
    assert openai_server.requests[1].json["stream"] is True


async def test_anthropic_stream_matches_the_whole_answer() -> None:
    blocks = (
        text("Checking both."),
        tool_use("toolu_p", "weather", {"city": "Paris", "units": "metric"}),
        tool_use("toolu_r", "weather", {"city": "Rome"}),
    )
    with FakeAnthropicServer(
        [
            message(*blocks, input_tokens=40, output_tokens=12, cache_read_input_tokens=8),
            CannedResponse(
                sse=message_stream(
                    *blocks, input_tokens=40, output_tokens=12, cache_read_input_tokens=8
                )
            ),
        ]
    ) as server:
        model = AnthropicModel("claude-test", base_url=server.base_url, api_key="k-test")
        whole = await model.complete(request())
        deltas: list[str] = []
        streamed = await model.stream(request(), deltas.append)
        assert server.requests[1].json["stream"] is True
    assert streamed == whole
    assert "".join(deltas) == "Checking both." and len(deltas) > 1
    assert streamed.usage.input_tokens == 48 and streamed.usage.cache_read_tokens == 8


async def test_a_stream_that_fails_mid_way_is_a_retryable_model_error() -> None:
    broken = [*message_stream(text("Hello there"))[:4]]
    broken.append(
        'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", '
        '"message": "Overloaded"}}\n\n'
    )
    with FakeAnthropicServer([CannedResponse(sse=broken)]) as server:
        model = AnthropicModel("claude-test", base_url=server.base_url, api_key="k-secret-1")
        with pytest.raises(ModelError) as caught:
            await model.stream(request(), lambda _: None)
    assert caught.value.non_retryable is False
    assert "Overloaded" in caught.value.message and "k-secret-1" not in caught.value.message
