"""A conversation past the model's window: each provider's refusal, in its own wire
format, becomes a `ModelError` of type `CONTEXT_TOO_LONG` (which the run compacts on);
and the known context windows of the built-in providers' models."""

from __future__ import annotations

import pytest

from durable_tools import AgentConfig, CompactionConfig, Message
from durable_tools.messages import ModelRequest
from durable_tools.models import (
    CONTEXT_TOO_LONG,
    AnthropicModel,
    ModelError,
    OpenAIChatModel,
    OpenAIResponsesModel,
    aclose_shared_clients,
    context_window,
)
from fake_anthropic import FakeAnthropicServer, message, text
from fake_openai import FakeOpenAIServer, chat_completion, responses_response

KEY = "sk-test-SENTINEL-0123456789"


def request(spec: str, chars: int) -> ModelRequest:
    return ModelRequest(model=spec, messages=[Message.user("x" * chars)])


async def refusal(model: OpenAIChatModel | OpenAIResponsesModel | AnthropicModel) -> ModelError:
    spec = "openai:m" if isinstance(model, OpenAIChatModel) else "anthropic:m"
    with pytest.raises(ModelError) as caught:
        await model.complete(request(spec, 8_000))
    await aclose_shared_clients()
    return caught.value


async def test_openai_context_length_exceeded_is_context_too_long() -> None:
    with FakeOpenAIServer([chat_completion("ok")], context_limit=1_000) as server:
        model = OpenAIChatModel("gpt-test", base_url=server.base_url, api_key=KEY)
        small = await model.complete(request("openai:gpt-test", 100))
        error = await refusal(model)
    assert small.message.content == "ok"  # under the limit the fake answers
    body = server.requests[-1].json
    assert body["messages"][0]["content"] == "x" * 8_000
    assert error.type == CONTEXT_TOO_LONG and not error.retryable and error.non_retryable
    assert "maximum context length is 1000 tokens" in error.message


async def test_openai_responses_context_length_exceeded_is_context_too_long() -> None:
    with FakeOpenAIServer([responses_response("ok")], context_limit=1_000) as server:
        model = OpenAIResponsesModel("gpt-test", base_url=server.base_url, api_key=KEY)
        error = await refusal(model)
    assert error.type == CONTEXT_TOO_LONG and not error.retryable


async def test_anthropic_prompt_is_too_long_is_context_too_long() -> None:
    with FakeAnthropicServer([message(text("ok"))], context_limit=1_000) as server:
        model = AnthropicModel("claude-test", base_url=server.base_url, api_key=KEY)
        error = await refusal(model)
    assert error.type == CONTEXT_TOO_LONG and not error.retryable
    assert "prompt is too long" in error.message and KEY not in error.message


def test_a_context_error_is_never_retryable_even_if_asked() -> None:
    error = ModelError("too long", retryable=True, context_exceeded=True)
    assert (error.type, error.retryable, error.non_retryable) == (CONTEXT_TOO_LONG, False, True)
    assert ModelError("other", retryable=False).type == "ModelError"


@pytest.mark.parametrize(
    ("spec", "window"),
    [
        ("openai:gpt-4o-mini", 128_000),
        ("openai:gpt-4o-2024-08-06", 128_000),
        ("openai:gpt-4", 8_192),
        ("openai:gpt-4-turbo", 128_000),
        ("openai:gpt-4.1-mini", 1_047_576),
        ("openai-responses:gpt-5-mini", 400_000),
        ("openai:o3", 200_000),
        ("anthropic:claude-sonnet-4-5", 200_000),
        ("anthropic:Claude-3-5-haiku-latest", 200_000),
        ("pydantic-ai:anthropic:claude-opus-4-1", 200_000),
        ("pydantic-ai:google-gla:gemini-2.5-pro", 1_048_576),
        ("pydantic-ai:openai:gpt-4o", 128_000),
        # Unknown: a local model behind an OpenAI-compatible server, scripts, other providers.
        ("openai:llama-3.1-8b-instruct", None),
        ("scripted:/tmp/steps.json", None),
        ("pydantic-ai:groq:llama-3.3-70b", None),
        ("anthropic:", None),
        ("gpt-4o", None),
        ("", None),
    ],
)
def test_known_context_windows(spec: str, window: int | None) -> None:
    assert context_window(spec) == window


def test_compaction_takes_the_known_window_and_records_it_with_the_config() -> None:
    config = AgentConfig(model="anthropic:claude-sonnet-4-5", compaction=CompactionConfig())
    assert config.compaction is not None and config.compaction.window_tokens == 200_000
    again = AgentConfig.model_validate_json(config.model_dump_json())
    assert again.compaction == config.compaction
    own = AgentConfig(
        model="anthropic:claude-sonnet-4-5", compaction=CompactionConfig(window_tokens=1_000_000)
    )
    assert own.compaction is not None and own.compaction.window_tokens == 1_000_000


def test_compaction_of_a_model_with_no_known_window_must_say_the_window() -> None:
    with pytest.raises(ValueError, match=r"compaction needs window_tokens.*'openai:my-llama'"):
        AgentConfig(model="openai:my-llama", compaction=CompactionConfig())


@pytest.mark.parametrize(
    "bad",
    [
        {"threshold": float("nan")},
        {"threshold": float("inf")},
        {"threshold": 0},
        {"threshold": 1.5},
        {"window_tokens": 0},
        {"window_tokens": -5},
        {"window_tokens": 10**12},
        {"keep_last": 0},
        {"summary_max_tokens": 10**9},
        {"summarizer_model": ""},
        {"windows_tokens": 1_000},  # a typo is refused, not ignored
    ],
)
def test_compaction_config_refuses_what_it_cannot_mean(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        CompactionConfig.model_validate({"window_tokens": 1_000, **bad})
