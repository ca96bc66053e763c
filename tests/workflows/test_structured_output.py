"""Structured final output end to end: a real worker on the dev server, each adapter through
its official SDK against a fake provider on 127.0.0.1 (or a scripted model), the schema
sent natively or as a `final_answer` tool, the answer validated in the workflow, repaired
a bounded number of times, and typed again by the client."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field, ValidationError
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from durable_tools import AgentConfig, DurableTools, Limits, RunStatus, ToolRegistry
from durable_tools.client.render._text import render_snapshot
from durable_tools.messages import OutputSchema
from durable_tools.models import aclose_shared_clients
from durable_tools.tools import FileSystemArtifactStore
from durable_tools.worker import workflow_runner
from durable_tools.workflows import AgentWorkflow
from fake_anthropic import FakeAnthropicServer, message, text, tool_use
from fake_openai import (
    FakeOpenAIServer,
    RecordedRequest,
    chat_completion,
    responses_response,
    tool_call,
)
from support import answer, assert_not_wedged, calls, running_worker, write_script


class Forecast(BaseModel):
    city: str
    celsius: int = Field(ge=-90, le=60)


def registry(*, extra_tool: str | None = None) -> ToolRegistry:
    tools = ToolRegistry()

    @tools.tool(read_only=True)
    def weather(city: str) -> str:
        """Current weather in a city."""
        return "18C"

    if extra_tool is not None:

        def clash() -> str:
            return "clash"

        tools.tool(name=extra_tool, read_only=True)(clash)
    return tools


@pytest.fixture
async def provider_keys(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[None]:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    yield
    await aclose_shared_clients()


async def run_agent(
    client: Client, task_queue: str, tmp_path: Path, config: AgentConfig, **options: Any
) -> Any:
    async with running_worker(
        client,
        options.pop("tools", None) or registry(),
        task_queue,
        artifact_store=FileSystemArtifactStore(tmp_path),
    ):
        run = await DurableTools(client, task_queue).start("Forecast for Paris?", config=config)
        result = await run.result()
        await assert_not_wedged(run.handle)
        timeline = await run.timeline()
        status = await run.status()
        conversation = await run.conversation()
    return run, result, timeline, status, conversation


# --------------------------------------------------------------------------- native


def chat_turn(request: RecordedRequest) -> dict[str, Any]:
    if not any(m["role"] == "tool" for m in request.json["messages"]):
        return chat_completion(tool_calls=[tool_call("call_1", "weather", '{"city":"Paris"}')])
    return chat_completion(content='{"city": "Paris", "celsius": 18}')


async def test_openai_native_structured_output(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    provider_keys: None,
) -> None:
    config = AgentConfig(model="openai:gpt-test", output_type=Forecast)
    with FakeOpenAIServer(chat_turn) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        run, result, timeline, status, _ = await run_agent(client, task_queue, tmp_path, config)
    assert result.status == RunStatus.COMPLETED, result
    assert result.output == Forecast(city="Paris", celsius=18)
    assert isinstance(result.output, Forecast)
    # The schema went natively, on every request (tools and structured output together).
    for request in server.requests:
        sent = request.json["response_format"]
        assert sent["type"] == "json_schema"
        assert sent["json_schema"]["name"] == "Forecast"
        assert sent["json_schema"]["strict"] is False
        assert sent["json_schema"]["schema"] == Forecast.model_json_schema()
        assert [t["function"]["name"] for t in request.json["tools"]] == ["weather"]
    assert [(r.tool, r.status) for r in timeline] == [
        ("weather", "completed"),
        ("final_answer", "completed"),
    ]
    shown = render_snapshot(run.run_id, status, timeline, "ui")
    assert "final_answer" in shown and "valid Forecast" in shown


async def test_openai_responses_native_structured_output(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    provider_keys: None,
) -> None:
    schema = OutputSchema.of(Forecast, name="forecast", strict=True)
    config = AgentConfig(model="openai-responses:gpt-test", output_type=schema)
    body = responses_response('{"city": "Paris", "celsius": 18}')
    with FakeOpenAIServer([body]) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        _, result, _, _, _ = await run_agent(client, task_queue, tmp_path, config)
    assert result.status == RunStatus.COMPLETED, result
    assert result.output == Forecast(city="Paris", celsius=18)
    [request] = server.requests
    assert request.json["text"]["format"] == {
        "type": "json_schema",
        "name": "forecast",
        "schema": Forecast.model_json_schema(),
        "strict": True,
    }


# ----------------------------------------------------------------------------- tool


def anthropic_turn(request: RecordedRequest) -> dict[str, Any]:
    turns = sum(1 for m in request.json["messages"] if m["role"] == "assistant")
    if turns == 0:
        return message(tool_use("toolu_w", "weather", {"city": "Paris"}))
    if turns == 1:  # an answer that breaks the schema: celsius out of range
        return message(tool_use("toolu_f1", "final_answer", {"city": "Paris", "celsius": 999}))
    return message(
        text("Done."), tool_use("toolu_f2", "final_answer", {"city": "Paris", "celsius": 18})
    )


@pytest.mark.parametrize("spec", ["anthropic:claude-test", "pydantic-ai:anthropic:claude-test"])
async def test_anthropic_final_answer_tool_repaired_then_accepted(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    provider_keys: None,
    spec: str,
) -> None:
    config = AgentConfig(model=spec, output_type=Forecast)
    with FakeAnthropicServer(anthropic_turn) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        _, result, timeline, _, _ = await run_agent(client, task_queue, tmp_path, config)
    assert result.status == RunStatus.COMPLETED, result
    assert result.output == Forecast(city="Paris", celsius=18)
    assert result.turns == 3
    first = server.requests[0].json
    # No native format for Anthropic: a `final_answer` tool beside the run's tools, unforced.
    assert "output_config" not in first
    assert first.get("tool_choice", {"type": "auto"}) == {"type": "auto"}
    tools = {t["name"]: t for t in first["tools"]}
    assert sorted(tools) == ["final_answer", "weather"]
    sent = tools["final_answer"]["input_schema"]  # Pydantic AI drops the titles
    assert sent["required"] == ["city", "celsius"]
    assert sent["properties"]["celsius"]["maximum"] == 60
    # The invalid answer went back as an error result of its call, naming the problem.
    [repair] = server.requests[2].json["messages"][-1]["content"]
    assert repair["tool_use_id"] == "toolu_f1" and repair["is_error"] is True
    said = repair["content"]  # text, or text blocks from Pydantic AI
    said = said if isinstance(said, str) else "".join(block["text"] for block in said)
    assert "$.celsius" in said and "999" in said
    assert [(r.tool, r.status) for r in timeline] == [
        ("weather", "completed"),
        ("final_answer", "invalid"),
        ("final_answer", "completed"),
    ]


async def test_a_final_answer_is_taken_on_the_turn_that_reaches_the_token_budget(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    provider_keys: None,
) -> None:
    """A text answer ends a run even when its turn reached `max_tokens`; so does the
    `final_answer` call of tool mode, which is the same answer in another form."""

    def answer_at_once(request: RecordedRequest) -> dict[str, Any]:
        return message(tool_use("toolu_f", "final_answer", {"city": "Paris", "celsius": 18}))

    config = AgentConfig(
        model="anthropic:claude-test", output_type=Forecast, limits=Limits(max_tokens=5)
    )
    with FakeAnthropicServer(answer_at_once) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        _, result, _, status, _ = await run_agent(client, task_queue, tmp_path, config)
    assert result.status == RunStatus.COMPLETED, result
    assert result.output == Forecast(city="Paris", celsius=18)
    assert status.usage is not None and status.usage.total_tokens > 5


# ------------------------------------------------------------------------- scripted


async def test_scripted_repair_once_then_typed_output(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    spec = write_script(
        tmp_path,
        [
            calls(("c1", "weather", {"city": "Paris"})),
            answer("Paris: 18C, mild."),  # not JSON at all
            answer('```json\n{"city": "Paris", "celsius": 18}\n```'),
        ],
    )
    config = AgentConfig(model=spec, output_type=Forecast)
    run, result, timeline, _, conversation = await run_agent(client, task_queue, tmp_path, config)
    assert result.status == RunStatus.COMPLETED, result
    assert result.output == Forecast(city="Paris", celsius=18)
    assert result.final_answer == '{"city": "Paris", "celsius": 18}'
    repair = conversation[-2]
    assert repair.role == "user"
    assert "output schema `Forecast`" in (repair.content or "")
    assert "malformed JSON" in (repair.content or "")
    assert [r.status for r in timeline if r.tool == "final_answer"] == ["invalid", "completed"]
    # The new path is deterministic: its history replays against the workflow code.
    replayer = Replayer(
        workflows=[AgentWorkflow],
        data_converter=pydantic_data_converter,
        workflow_runner=workflow_runner(),
    )
    replayed = await replayer.replay_workflow(
        await run.handle.fetch_history(), raise_on_replay_failure=False
    )
    assert replayed.replay_failure is None
    # Another process without the type gets the JSON object, and can ask for the type.
    handle = DurableTools(client, task_queue).run(run.run_id)
    assert (await handle.result()).output == {"city": "Paris", "celsius": 18}
    typed = await handle.result(output_type=Forecast)
    assert typed.output == Forecast(city="Paris", celsius=18)


async def test_invalid_past_the_bound_fails_with_the_reason(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    bad = answer('{"city": "Paris"}')
    spec = write_script(tmp_path, [bad, bad, bad])
    config = AgentConfig(model=spec, output_type=Forecast, output_retries=1)
    _, result, timeline, _, _ = await run_agent(client, task_queue, tmp_path, config)
    assert result.status == RunStatus.FAILED
    assert result.turns == 2  # the answer and one repair; the third step never asked
    assert result.reason == (
        "the final answer does not match the output schema 'Forecast' after 1 repair(s): "
        "$: 'celsius' is a required property"
    )
    assert result.output is None
    assert [r.status for r in timeline] == ["invalid", "invalid"]


async def test_json_schema_dict_output_and_tool_mode_with_scripted(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    schema = {
        "title": "Verdict",
        "type": "object",
        "properties": {"ok": {"type": "boolean"}},
        "required": ["ok"],
        "additionalProperties": False,
    }
    spec = write_script(tmp_path, [calls(("f1", "final_answer", {"ok": True}))])
    config = AgentConfig(model=spec, output_type=OutputSchema.of(schema, mode="tool"))
    _, result, timeline, _, _ = await run_agent(client, task_queue, tmp_path, config)
    assert result.status == RunStatus.COMPLETED, result
    assert result.output == {"ok": True}
    assert result.tool_calls == 0  # the answer is not a tool call of the run
    assert [(r.call_id, r.status) for r in timeline] == [("f1", "completed")]


async def test_a_tool_named_final_answer_fails_the_run_clearly(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    spec = write_script(tmp_path, [answer('{"city": "Paris", "celsius": 18}')])
    config = AgentConfig(model=spec, output_type=OutputSchema.of(Forecast, mode="tool"))
    _, result, _, _, _ = await run_agent(
        client, task_queue, tmp_path, config, tools=registry(extra_tool="final_answer")
    )
    assert result.status == RunStatus.FAILED
    assert "clashes with the structured output tool" in (result.reason or "")


# ---------------------------------------------------------------------------- config


def test_output_type_crosses_the_wire_as_its_schema() -> None:
    config = AgentConfig(model="scripted:x", output_type=Forecast)
    assert config.output_type is not None
    assert config.output_type.python_type is Forecast
    wire = json.loads(config.model_dump_json())
    received = AgentConfig.model_validate(wire)
    assert received.output_type is not None
    assert received.output_type.model_dump() == config.output_type.model_dump()
    assert received.output_type.python_type is None
    assert wire["output_type"]["json_schema"] == Forecast.model_json_schema()


def test_output_type_must_be_an_object_schema() -> None:
    with pytest.raises(ValidationError, match="must describe an object"):
        AgentConfig(model="scripted:x", output_type={"type": "array"})
    with pytest.raises(ValidationError, match="not a valid JSON Schema"):
        AgentConfig(model="scripted:x", output_type={"type": "object", "minProperties": -1})


async def test_start_takes_the_output_type_for_one_run(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    spec = write_script(tmp_path, [answer('{"city": "Rome", "celsius": 24}')])
    async with running_worker(client, registry(), task_queue):
        run = await DurableTools(client, task_queue).start(
            "Forecast for Rome?", model=spec, output_type=Forecast
        )
        result = await run.result()
        await assert_not_wedged(run.handle)
    assert result.output == Forecast(city="Rome", celsius=24)
