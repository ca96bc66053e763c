"""Model settings reach each provider as its own request fields, read back from the body
the fake server (a real HTTP server on 127.0.0.1) received through the official SDK."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import ValidationError

from durable_tools import Message
from durable_tools.messages import ModelRequest, ModelSettings, ToolDefinition
from durable_tools.models import (
    AnthropicModel,
    OpenAIChatModel,
    OpenAIResponsesModel,
    aclose_shared_clients,
)
from fake_anthropic import FakeAnthropicServer, message, text
from fake_openai import FakeOpenAIServer, chat_completion, responses_response

WEATHER = ToolDefinition(name="weather", description="Current weather")

FULL = ModelSettings(
    temperature=0.2,
    max_output_tokens=300,
    tool_choice={"name": "weather"},  # type: ignore[arg-type]  # validated into the model
    parallel_tool_calls=False,
    stop=("END",),
    seed=7,
    reasoning_effort="low",
    extra={"top_p": 0.5},
)

SETTING_KEYS = {
    "temperature",
    "max_completion_tokens",
    "max_output_tokens",
    "tool_choice",
    "parallel_tool_calls",
    "stop",
    "stop_sequences",
    "seed",
    "reasoning_effort",
    "reasoning",
    "top_p",
}


def request(settings: ModelSettings | None, *, tools: bool = True) -> ModelRequest:
    return ModelRequest(
        model="any",
        messages=[Message.user("Weather in Paris?")],
        tools=[WEATHER] if tools else [],
        settings=settings,
    )


@pytest.fixture(autouse=True)
async def close_clients() -> AsyncIterator[None]:
    yield
    await aclose_shared_clients()


async def openai_body(settings: ModelSettings | None, *, tools: bool = True) -> dict[str, Any]:
    with FakeOpenAIServer([chat_completion(content="ok")]) as server:
        model = OpenAIChatModel("gpt-test", base_url=server.base_url, api_key="k")
        await model.complete(request(settings, tools=tools))
        body: dict[str, Any] = server.requests[0].json
        return body


async def responses_body(settings: ModelSettings | None) -> dict[str, Any]:
    with FakeOpenAIServer([responses_response("ok")]) as server:
        model = OpenAIResponsesModel("gpt-test", base_url=server.base_url, api_key="k")
        await model.complete(request(settings))
        body: dict[str, Any] = server.requests[0].json
        return body


async def anthropic_body(settings: ModelSettings | None) -> dict[str, Any]:
    with FakeAnthropicServer([message(text("ok"))]) as server:
        model = AnthropicModel(
            "claude-test", base_url=server.base_url, api_key="k", max_tokens=1000
        )
        await model.complete(request(settings))
        body: dict[str, Any] = server.requests[0].json
        return body


async def test_openai_chat_fields() -> None:
    body = await openai_body(FULL)
    assert {key: body[key] for key in body.keys() & SETTING_KEYS} == {
        "temperature": 0.2,
        "max_completion_tokens": 300,
        "tool_choice": {"type": "function", "function": {"name": "weather"}},
        "parallel_tool_calls": False,
        "stop": ["END"],
        "seed": 7,
        "reasoning_effort": "low",
        "top_p": 0.5,
    }


async def test_openai_chat_tool_fields_only_with_tools() -> None:
    body = await openai_body(
        ModelSettings(tool_choice="required", parallel_tool_calls=True), tools=False
    )
    assert "tool_choice" not in body
    assert "parallel_tool_calls" not in body


async def test_openai_responses_fields() -> None:
    body = await responses_body(FULL)
    assert {key: body[key] for key in body.keys() & SETTING_KEYS} == {
        "temperature": 0.2,
        "max_output_tokens": 300,
        "tool_choice": {"type": "function", "name": "weather"},
        "parallel_tool_calls": False,
        "reasoning": {"effort": "low"},
        "top_p": 0.5,
    }


async def test_anthropic_fields() -> None:
    body = await anthropic_body(FULL)
    assert body["max_tokens"] == 300  # the settings' length replaces the adapter's
    assert {key: body[key] for key in body.keys() & SETTING_KEYS} == {
        "temperature": 0.2,
        "tool_choice": {"type": "tool", "name": "weather", "disable_parallel_tool_use": True},
        "stop_sequences": ["END"],
        "top_p": 0.5,
    }


async def test_anthropic_choices() -> None:
    required = await anthropic_body(ModelSettings(tool_choice="required"))
    assert required["tool_choice"] == {"type": "any"}
    serial = await anthropic_body(ModelSettings(parallel_tool_calls=False))
    assert serial["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    none = await anthropic_body(ModelSettings(tool_choice="none", parallel_tool_calls=False))
    assert none["tool_choice"] == {"type": "none"}


async def test_no_settings_send_nothing() -> None:
    """A run without settings sends the bodies it sent before settings existed."""
    for body in (await openai_body(None), await responses_body(None), await anthropic_body(None)):
        assert body.keys() & SETTING_KEYS == set()
    assert (await anthropic_body(None))["max_tokens"] == 1000


def test_merge_over_agent_settings() -> None:
    agent = ModelSettings(temperature=0.1, seed=3, extra={"top_p": 0.9, "user": "a"})
    merged = agent.merged(ModelSettings(temperature=0.7, extra={"user": "b"}))
    assert merged.temperature == 0.7
    assert merged.seed == 3
    assert merged.extra == {"top_p": 0.9, "user": "b"}
    assert agent.merged(None) is agent


def test_settings_are_checked() -> None:
    with pytest.raises(ValidationError, match="tool_choice"):
        ModelSettings(tool_choice="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="temperatur"):
        ModelSettings(temperatur=0.3)  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="extra may not set messages, stream"):
        ModelSettings(extra={"stream": True, "messages": []})
