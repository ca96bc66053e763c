"""Each provider adapter runs a tool-calling loop end to end: a real worker, the dev server,
the official SDK as the client, and a fake provider on 127.0.0.1 speaking the real wire format.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from durable_tools import AgentConfig, DurableTools, RunStatus, ToolRegistry
from durable_tools.models import aclose_shared_clients
from durable_tools.tools import FileSystemArtifactStore
from fake_anthropic import FakeAnthropicServer, message, text, tool_use
from fake_openai import (
    FakeOpenAIServer,
    RecordedRequest,
    chat_completion,
    responses_response,
    tool_call,
)
from support import assert_not_wedged, running_worker


def weather_registry() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    def weather(city: str) -> str:
        """Current weather in a city."""
        return {"Paris": "18C", "Rome": "24C"}[city]

    return registry


def anthropic_turn(request: RecordedRequest) -> dict[str, Any]:
    if len(request.json["messages"]) == 1:
        return message(
            text("Checking both."),
            tool_use("toolu_p", "weather", {"city": "Paris"}),
            tool_use("toolu_r", "weather", {"city": "Rome"}),
        )
    return message(text("Paris 18C, Rome 24C."))


def anthropic_results(requests: list[RecordedRequest]) -> list[tuple[str, str]]:
    [user] = [m for m in requests[1].json["messages"] if m["role"] == "user"][1:]
    return [(b["tool_use_id"], _text_of(b["content"])) for b in user["content"]]


def _text_of(content: str | list[dict[str, Any]]) -> str:
    # The adapter sends a result as text; Pydantic AI (the bridge) as a list of text blocks.
    return content if isinstance(content, str) else "".join(b["text"] for b in content)


def chat_turn(request: RecordedRequest) -> dict[str, Any]:
    if len(request.json["messages"]) == 1:
        return chat_completion(
            tool_calls=[
                tool_call("call_p", "weather", json.dumps({"city": "Paris"})),
                tool_call("call_r", "weather", json.dumps({"city": "Rome"})),
            ]
        )
    return chat_completion(content="Paris 18C, Rome 24C.")


def chat_results(requests: list[RecordedRequest]) -> list[tuple[str, str]]:
    messages = requests[1].json["messages"]
    return [(m["tool_call_id"], m["content"]) for m in messages if m["role"] == "tool"]


def responses_turn(request: RecordedRequest) -> dict[str, Any]:
    if len(request.json["input"]) == 1:
        return responses_response(
            None,
            [("call_p", "weather", '{"city":"Paris"}'), ("call_r", "weather", '{"city":"Rome"}')],
        )
    return responses_response("Paris 18C, Rome 24C.")


def responses_results(requests: list[RecordedRequest]) -> list[tuple[str, str]]:
    items = requests[1].json["input"]
    return [(i["call_id"], i["output"]) for i in items if i.get("type") == "function_call_output"]


Case = tuple[str, type[FakeOpenAIServer], str, str, Callable[..., Any], Callable[..., Any]]
CASES: dict[str, Case] = {
    "anthropic": (
        "anthropic:claude-test",
        FakeAnthropicServer,
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_API_KEY",
        anthropic_turn,
        anthropic_results,
    ),
    # The bridge: Pydantic AI's Anthropic model class (and the official SDK under it).
    "pydantic-ai": (
        "pydantic-ai:anthropic:claude-test",
        FakeAnthropicServer,
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_API_KEY",
        anthropic_turn,
        anthropic_results,
    ),
    "openai": (
        "openai:gpt-test",
        FakeOpenAIServer,
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        chat_turn,
        chat_results,
    ),
    "openai-responses": (
        "openai-responses:gpt-test",
        FakeOpenAIServer,
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        responses_turn,
        responses_results,
    ),
}


@pytest.fixture(params=sorted(CASES))
def case(request: pytest.FixtureRequest) -> Iterator[Case]:
    yield CASES[request.param]


async def test_parallel_tool_calls_loop_end_to_end(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    case: Case,
) -> None:
    spec, server_class, url_env, key_env, turn, results = case
    with server_class(turn) as server:
        monkeypatch.setenv(url_env, server.base_url)
        monkeypatch.setenv(key_env, "test-key")
        try:
            async with running_worker(
                client,
                weather_registry(),
                task_queue,
                artifact_store=FileSystemArtifactStore(tmp_path),
            ):
                run = await DurableTools(client, task_queue).start(
                    "Weather in Paris and Rome?", config=AgentConfig(model=spec)
                )
                result = await run.result()
                await assert_not_wedged(run.handle)
        finally:
            await aclose_shared_clients()
    assert result.status == RunStatus.COMPLETED, result
    assert result.final_answer == "Paris 18C, Rome 24C."
    assert len(server.requests) == 2
    # Both parallel calls ran and went back to the model, tied to their calls by id.
    prefix = "toolu" if "anthropic" in spec else "call"
    assert results(server.requests) == [(f"{prefix}_p", "18C"), (f"{prefix}_r", "24C")]
