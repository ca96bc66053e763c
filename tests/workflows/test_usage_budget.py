"""Token usage and budgets of a durable run: a real worker on the dev server, the OpenAI
adapter through the official SDK, and a fake provider on 127.0.0.1 reporting usage."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from durable_tools import AgentConfig, DurableTools, Limits, Price, RunStatus, ToolRegistry
from durable_tools.client.render._text import render_snapshot
from durable_tools.messages import ModelSettings
from durable_tools.models import aclose_shared_clients
from durable_tools.tools import FileSystemArtifactStore
from fake_openai import FakeOpenAIServer, RecordedRequest, chat_completion, tool_call
from support import assert_not_wedged, running_worker

PRICE = Price(input_per_mtok=2.0, output_per_mtok=8.0, cached_input_per_mtok=0.5)


def registry() -> ToolRegistry:
    tools = ToolRegistry()

    @tools.tool(read_only=True)
    def weather(city: str) -> str:
        """Current weather in a city."""
        return "18C"

    return tools


def with_usage(body: dict[str, Any], *, cached: int, reasoning: int) -> dict[str, Any]:
    body["usage"]["prompt_tokens_details"] = {"cached_tokens": cached}
    body["usage"]["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    return body


def call_weather(request: RecordedRequest) -> dict[str, Any]:
    """Always one more tool call, 100 tokens in (40 cached) and 20 out (5 reasoning)."""
    turn = sum(1 for m in request.json["messages"] if m["role"] == "assistant")
    body = chat_completion(
        tool_calls=[tool_call(f"call_{turn}", "weather", json.dumps({"city": "Paris"}))],
        prompt_tokens=100,
        completion_tokens=20,
    )
    return with_usage(body, cached=40, reasoning=5)


def weather_then_answer(request: RecordedRequest) -> dict[str, Any]:
    if any(m["role"] == "tool" for m in request.json["messages"]):
        body = chat_completion(content="18C.", prompt_tokens=150, completion_tokens=30)
        return with_usage(body, cached=40, reasoning=5)
    return call_weather(request)


@asynccontextmanager
async def weather_worker(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    answer: Callable[[RecordedRequest], dict[str, Any]],
) -> AsyncIterator[FakeOpenAIServer]:
    """The fake provider answering with `answer`, the adapter pointed at it, and a worker
    with `weather`, for the block."""
    with FakeOpenAIServer(answer) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        async with running_worker(
            client, registry(), task_queue, artifact_store=FileSystemArtifactStore(tmp_path)
        ):
            yield server


@pytest.fixture
async def openai_env(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[None]:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    yield
    await aclose_shared_clients()


async def test_usage_summed_priced_and_settings_sent(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    openai_env: None,
) -> None:
    config = AgentConfig(
        model="openai:gpt-test",
        model_settings=ModelSettings(temperature=0.3, seed=1),
        prices={"openai:gpt-test": PRICE},
    )
    async with weather_worker(
        client, task_queue, tmp_path, monkeypatch, weather_then_answer
    ) as server:
        run = await DurableTools(client, task_queue).start(
            "Weather?", config=config, model_settings=ModelSettings(seed=11)
        )
        result = await run.result()
        snapshot = await run.status()
        events = await run.events()
        await assert_not_wedged(run.handle)
    assert result.status == RunStatus.COMPLETED, result
    # The agent's settings with the run's over them, in every request the provider got.
    assert len(server.requests) == 2
    for sent in server.requests:
        assert (sent.json["temperature"], sent.json["seed"]) == (0.3, 11)
    usage = snapshot.usage
    assert (usage.input_tokens, usage.output_tokens) == (250, 50)
    assert (usage.cache_read_tokens, usage.reasoning_tokens) == (80, 10)
    # (250 - 80) * 2 + 80 * 0.5 + 50 * 8 per million tokens
    assert snapshot.cost == pytest.approx(780 / 1_000_000)
    per_turn = [e.details for e in events if e.event == "model.usage"]
    assert [(d["input_tokens"], d["output_tokens"]) for d in per_turn] == [(100, 20), (150, 30)]
    shown = render_snapshot(run.run_id, snapshot, [], "ui")
    assert "tokens: 250 in (80 cached), 50 out (10 reasoning)  cost 0.0008" in shown


async def test_token_budget_ends_run_across_continue_as_new(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    openai_env: None,
) -> None:
    config = AgentConfig(
        model="openai:gpt-test",
        limits=Limits(max_tokens=1_000),
        continue_as_new_after_events=20,
    )
    async with weather_worker(client, task_queue, tmp_path, monkeypatch, call_weather) as server:
        run = await DurableTools(client, task_queue).start("Weather?", config=config)
        result = await run.result()
        snapshot = await run.status()
        await assert_not_wedged(run.handle)
    # 120 tokens a turn: the ninth turn reaches 1,080, counted over continue-as-new.
    assert result.status == RunStatus.LIMIT_REACHED, result
    assert result.reason == "max_tokens (1,000) reached: used 1,080"
    assert len(server.requests) == 9
    assert snapshot.continued >= 1
    assert snapshot.usage.total_tokens == 1_080


async def test_cost_budget_ends_run(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    openai_env: None,
) -> None:
    # A turn costs (60 * 2 + 40 * 0.5 + 20 * 8) / 1e6 = 0.0003.
    config = AgentConfig(
        model="openai:gpt-test",
        limits=Limits(max_cost=0.0005),
        prices={"openai:gpt-test": PRICE},
    )
    async with weather_worker(client, task_queue, tmp_path, monkeypatch, call_weather) as server:
        run = await DurableTools(client, task_queue).start("Weather?", config=config)
        result = await run.result()
        await assert_not_wedged(run.handle)
    assert result.status == RunStatus.LIMIT_REACHED, result
    assert result.reason == "max_cost (0.0005) reached: spent 0.0006"
    assert len(server.requests) == 2


def test_cost_budget_needs_a_price() -> None:
    with pytest.raises(ValueError, match="needs a price for the model 'openai:gpt-test'"):
        AgentConfig(model="openai:gpt-test", limits=Limits(max_cost=1.0))
