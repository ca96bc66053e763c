"""Fallback models: a real worker on the dev server, the official SDKs as clients and fake
providers on 127.0.0.1 that fail the first model with the provider's own error answers."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowFailureError

from durable_tools import AgentConfig, DurableTools, Price, RunStatus, ToolRegistry
from durable_tools.models import aclose_shared_clients
from durable_tools.protocol._records import RunEvent
from durable_tools.tools import FileSystemArtifactStore
from durable_tools.workflows import RunSnapshot
from fake_anthropic import FakeAnthropicServer, anthropic_status, message, text, tool_use
from fake_openai import (
    CannedResponse,
    FakeOpenAIServer,
    RecordedRequest,
    chat_completion,
    context_length_error,
    openai_error,
    tool_call,
)
from support import assert_not_wedged, running_worker

Answer = CannedResponse | dict[str, Any]


def registry() -> ToolRegistry:
    tools = ToolRegistry()

    @tools.tool(read_only=True)
    def weather(city: str) -> str:
        """Current weather in a city."""
        return "18C"

    return tools


def anthropic_turn(request: RecordedRequest) -> dict[str, Any]:
    if len(request.json["messages"]) == 1:
        return message(text("Checking."), tool_use("toolu_1", "weather", {"city": "Paris"}))
    return message(text("18C in Paris."), input_tokens=100, output_tokens=20)


def chat_turn(request: RecordedRequest) -> dict[str, Any]:
    if len(request.json["messages"]) == 1:
        return chat_completion(tool_calls=[tool_call("call_1", "weather", '{"city": "Paris"}')])
    return chat_completion(content="18C in Paris.")


def by_model(failing: dict[str, Answer], answer: Callable[[RecordedRequest], Answer]) -> Any:
    """A responder failing the named models with their canned error, answering the rest."""

    def respond(request: RecordedRequest) -> Answer:
        return failing.get(request.json["model"]) or answer(request)

    return respond


def models_asked(server: FakeOpenAIServer) -> list[str]:
    return [str(r.json["model"]) for r in server.requests]


@asynccontextmanager
async def provider(
    server: FakeOpenAIServer,
    client: Client,
    task_queue: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[None]:
    prefix = "ANTHROPIC" if isinstance(server, FakeAnthropicServer) else "OPENAI"
    with server:
        monkeypatch.setenv(f"{prefix}_BASE_URL", server.base_url)
        monkeypatch.setenv(f"{prefix}_API_KEY", "test-key")
        try:
            async with running_worker(
                client, registry(), task_queue, artifact_store=FileSystemArtifactStore(tmp_path)
            ):
                yield
        finally:
            await aclose_shared_clients()


async def run_agent(
    client: Client, task_queue: str, config: AgentConfig
) -> tuple[RunSnapshot, list[RunEvent]]:
    """Run to its end; its final status (a failed run's reason included) and events."""
    run = await DurableTools(client, task_queue).start("Weather in Paris?", config=config)
    with contextlib.suppress(WorkflowFailureError):
        await run.result()
    status = await run.status()
    events = await run.events()
    await assert_not_wedged(run.handle)
    return status, events


def named(events: list[RunEvent], name: str) -> list[RunEvent]:
    return [e for e in events if e.event == name]


async def test_overloaded_model_falls_back_to_the_next_and_each_turn_names_its_model(
    client: Client, task_queue: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Anthropic's 529 past the first model's retries: every turn is answered by the second
    model, the events say so, and the cost is the second model's price."""
    server = FakeAnthropicServer(by_model({"claude-busy": anthropic_status(529)}, anthropic_turn))
    config = AgentConfig(
        model=["anthropic:claude-busy", "anthropic:claude-spare"],
        model_max_attempts=2,
        prices={
            "anthropic:claude-busy": Price(input_per_mtok=1_000.0, output_per_mtok=1_000.0),
            "anthropic:claude-spare": Price(input_per_mtok=1.0, output_per_mtok=2.0),
        },
    )
    async with provider(server, client, task_queue, tmp_path, monkeypatch):
        status, events = await run_agent(client, task_queue, config)
    assert status.status == RunStatus.COMPLETED, status
    assert status.final_answer == "18C in Paris."
    # Each turn: the first model twice (its retry budget), then the second.
    assert models_asked(server) == ["claude-busy", "claude-busy", "claude-spare"] * 2
    fallbacks = named(events, "model.fallback")
    assert [(e.details["from"], e.details["to"]) for e in fallbacks] == [
        ("anthropic:claude-busy", "anthropic:claude-spare")
    ] * 2
    assert fallbacks[0].details["status"] == 529
    assert "Overloaded" in (fallbacks[0].detail or "")
    usage = named(events, "model.usage")
    assert [e.details["model"] for e in usage] == ["anthropic:claude-spare"] * 2
    assert "by anthropic:claude-spare" in (usage[0].detail or "")
    # Priced at the model that answered: (10 + 100) in at 1, (5 + 20) out at 2, per Mtok.
    assert status.cost == pytest.approx((110 * 1.0 + 25 * 2.0) / 1_000_000)


@pytest.mark.parametrize("status_code", [429, 503])
async def test_rate_limit_or_outage_past_the_budget_falls_back(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    status_code: int,
) -> None:
    server = FakeOpenAIServer(by_model({"gpt-a": openai_error(status_code)}, chat_turn))
    config = AgentConfig(model=["openai:gpt-a", "openai:gpt-b"], model_max_attempts=3)
    async with provider(server, client, task_queue, tmp_path, monkeypatch):
        status, events = await run_agent(client, task_queue, config)
    assert status.status == RunStatus.COMPLETED, status
    assert models_asked(server) == ["gpt-a"] * 3 + ["gpt-b"] + ["gpt-a"] * 3 + ["gpt-b"]
    assert [e.details["status"] for e in named(events, "model.fallback")] == [status_code] * 2


async def test_first_model_answers_again_once_it_recovers(
    client: Client, task_queue: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every turn starts from the first model: one failed turn does not stick."""
    failures = iter([anthropic_status(529)])

    def respond(request: RecordedRequest) -> Answer:
        if request.json["model"] == "claude-busy":
            return next(failures, None) or anthropic_turn(request)
        return anthropic_turn(request)

    server = FakeAnthropicServer(respond)
    config = AgentConfig(
        model=["anthropic:claude-busy", "anthropic:claude-spare"], model_max_attempts=1
    )
    async with provider(server, client, task_queue, tmp_path, monkeypatch):
        status, events = await run_agent(client, task_queue, config)
    assert status.status == RunStatus.COMPLETED, status
    assert models_asked(server) == ["claude-busy", "claude-spare", "claude-busy"]
    assert [e.details["model"] for e in named(events, "model.usage")] == [
        "anthropic:claude-spare",
        "anthropic:claude-busy",
    ]


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (anthropic_status(401), "authentication failed"),
        (anthropic_status(400), "text content blocks must be non-empty"),
        (
            CannedResponse(
                400,
                {
                    "type": "error",
                    "error": {
                        "type": "invalid_request_error",
                        "message": "prompt is too long: 300000 tokens > 200000 maximum",
                    },
                },
            ),
            "context window",
        ),
    ],
    ids=["rejected-key", "invalid-request", "context-too-long"],
)
async def test_no_fallback_for_a_rejected_key_or_request(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    answer: CannedResponse,
    reason: str,
) -> None:
    server = FakeAnthropicServer(by_model({"claude-main": answer}, anthropic_turn))
    config = AgentConfig(model=["anthropic:claude-main", "anthropic:claude-spare"])
    async with provider(server, client, task_queue, tmp_path, monkeypatch):
        status, events = await run_agent(client, task_queue, config)
    assert status.status == RunStatus.FAILED
    assert reason in (status.reason or "")
    assert "fell back" not in (status.reason or "")
    assert models_asked(server) == ["claude-main"]  # asked once, never the second model
    assert named(events, "model.fallback") == []


async def test_every_model_failing_fails_the_run_naming_them(
    client: Client, task_queue: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = FakeOpenAIServer(
        by_model({"gpt-a": openai_error(503), "gpt-b": openai_error(401)}, chat_turn)
    )
    config = AgentConfig(model=["openai:gpt-a", "openai:gpt-b"], model_max_attempts=2)
    async with provider(server, client, task_queue, tmp_path, monkeypatch):
        status, events = await run_agent(client, task_queue, config)
    assert status.status == RunStatus.FAILED
    assert "fell back from openai:gpt-a to openai:gpt-b" in (status.reason or "")
    assert "authentication failed" in (status.reason or "")
    assert models_asked(server) == ["gpt-a", "gpt-a", "gpt-b"]
    assert len(named(events, "model.fallback")) == 1


async def test_a_fallback_model_too_long_context_is_compactions_not_a_fallback(
    client: Client, task_queue: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second model saying "too long" ends the turn like the first would (no third)."""
    server = FakeOpenAIServer(
        by_model(
            {"gpt-a": openai_error(503), "gpt-b": context_length_error(8_000, 9_000)}, chat_turn
        )
    )
    config = AgentConfig(
        model=["openai:gpt-a", "openai:gpt-b", "openai:gpt-c"], model_max_attempts=1
    )
    async with provider(server, client, task_queue, tmp_path, monkeypatch):
        status, _ = await run_agent(client, task_queue, config)
    assert status.status == RunStatus.FAILED
    assert models_asked(server) == ["gpt-a", "gpt-b"]
    assert "context window" in (status.reason or "")


def test_a_model_list_is_the_model_then_its_fallbacks() -> None:
    config = AgentConfig(model=["openai:gpt-a", "anthropic:claude-b"])
    assert config.model == "openai:gpt-a"
    assert config.fallback_models == ["anthropic:claude-b"]
    assert config.models == ["openai:gpt-a", "anthropic:claude-b"]
    again = AgentConfig.model_validate_json(config.model_dump_json())
    assert again == config
    # One string stays exactly as it was on the wire: no new field is written.
    single = json.loads(AgentConfig(model="openai:gpt-a").model_dump_json())
    assert single == {"model": "openai:gpt-a"}
    assert AgentConfig(model=["openai:gpt-a"]).fallback_models == []


@pytest.mark.parametrize(
    ("given", "error"),
    [
        ({"model": []}, "empty list"),
        ({"model": ["openai:a", 3]}, "only strings"),
        ({"model": ["openai:a", "openai:a"]}, "listed once"),
        ({"model": ["openai:a", "openai:b"], "fallback_models": ["openai:c"]}, "not both"),
        ({"model": ["openai:a", "openai:b"], "model_max_attempts": 0}, "finite"),
        ({"model": ["openai:a", ""]}, "empty"),
        ({"model": ["openai:a", "x" * 5_000]}, "too long"),
        ({"model": ["openai:m"] + [f"openai:{i}" for i in range(9)]}, "at most 8"),
        (
            {
                "model": ["openai:a", "openai:b"],
                "limits": {"max_cost": 1.0},
                "prices": {"openai:a": {"input_per_mtok": 1, "output_per_mtok": 1}},
            },
            "price for the model 'openai:b'",
        ),
        (
            {"model": ["openai:gpt-4o", "openai:local-llm"], "compaction": {}},
            "'openai:local-llm' is not known",
        ),
    ],
)
def test_a_model_list_that_cannot_fall_back_as_documented_is_refused(
    given: dict[str, Any], error: str
) -> None:
    with pytest.raises(ValueError, match=error):
        AgentConfig.model_validate(given)


def test_compaction_uses_the_smallest_window_of_the_models() -> None:
    config = AgentConfig.model_validate(
        {"model": ["openai:gpt-4.1", "openai:gpt-4o"], "compaction": {}}
    )
    assert config.compaction is not None
    assert config.compaction.window_tokens == 128_000


async def test_the_client_checks_every_model_spec_before_starting(client: Client) -> None:
    config = AgentConfig(model=["openai:gpt-a", "nosuch:model"])
    with pytest.raises(ValueError, match="nosuch"):
        await DurableTools(client, "unused-queue").start("hi", config=config)
