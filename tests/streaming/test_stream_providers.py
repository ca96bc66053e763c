"""Anthropic and the Responses API stream through a durable run too: tool call, then text."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from stream_support import text_of
from temporalio.client import Client

from durable_tools import AgentConfig, DurableTools, RunStatus, ToolRegistry
from durable_tools.models import aclose_shared_clients
from durable_tools.streaming import StreamEvent
from fake_anthropic import FakeAnthropicServer, message_stream, text, tool_use
from fake_openai import CannedResponse, FakeOpenAIServer, RecordedRequest, responses_stream
from support import assert_not_wedged, running_worker

ANSWER = "Paris is 18C and sunny today."


def weather() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    def weather(city: str) -> str:
        """Current weather in a city."""
        return "18C, sunny"

    return registry


def anthropic_answer(request: RecordedRequest) -> CannedResponse:
    assert request.json["stream"] is True
    if len(request.json["messages"]) == 1:
        return CannedResponse(sse=message_stream(tool_use("toolu_1", "weather", {"city": "Paris"})))
    return CannedResponse(sse=message_stream(text(ANSWER), splits=4))


def responses_answer(request: RecordedRequest) -> CannedResponse:
    assert request.json["stream"] is True
    if len(request.json["input"]) == 1:
        args = json.dumps({"city": "Paris"})
        return CannedResponse(
            sse=responses_stream(None, [("call_1", "weather", [args[:4], args[4:]])])
        )
    return CannedResponse(sse=responses_stream([ANSWER[:10], ANSWER[10:20], ANSWER[20:]]))


@pytest.mark.parametrize("provider", ["anthropic", "openai-responses"])
async def test_a_provider_streams_through_a_durable_run(
    client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch, provider: str
) -> None:
    server: Any = (
        FakeAnthropicServer(anthropic_answer)
        if provider == "anthropic"
        else FakeOpenAIServer(responses_answer)
    )
    env = "ANTHROPIC" if provider == "anthropic" else "OPENAI"
    events: list[StreamEvent] = []
    with server:
        monkeypatch.setenv(f"{env}_BASE_URL", server.base_url)
        monkeypatch.setenv(f"{env}_API_KEY", "k-test-providers-0123")
        try:
            async with running_worker(client, weather(), task_queue):
                run = await DurableTools(client, task_queue).start(
                    "Weather in Paris?",
                    config=AgentConfig(model=f"{provider}:m-test", stream_tokens=True),
                )
                async for event in run.stream():
                    events.append(event)
                result = await asyncio.wait_for(run.result(), 30)
                await assert_not_wedged(run.handle)
        finally:
            await aclose_shared_clients()
    assert result.status == RunStatus.COMPLETED and result.final_answer == ANSWER
    assert text_of(events) == ANSWER
    assert len([e for e in events if e.kind == "text" and e.turn == 2]) >= 1
    assert [e.turn for e in events if e.kind == "message_end"] == [1, 2]
