"""Provider aliases end to end (real dev server): a model calling a tool by its alias for the
run's provider reaches the tool; every later stage (approval, timeline) sees the tool's own
name; another provider's alias is an unknown tool."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from temporalio.client import Client

from durable_tools import DurableTools, Message, RunStatus, ToolRegistry
from durable_tools.models import aclose_shared_clients
from fake_anthropic import FakeAnthropicServer, RecordedRequest, message, text, tool_use
from fake_openai import CannedResponse
from support import answer, assert_not_wedged, calls, running_worker, wait_for, write_script


def weather_registry(ran: list[str]) -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(
        read_only=True,
        aliases={"scripted": "getWeather", "anthropic": "weatherNow", "openai": "get-weather"},
    )
    def get_weather(city: str) -> str:
        """Current weather in a city."""
        ran.append(city)
        return f"sunny in {city}"

    @registry.tool(approval=True, aliases={"scripted": "sendMail"})
    def send_mail(to: str) -> str:
        """Send a mail (needs approval)."""
        ran.append(f"mail {to}")
        return "sent"

    return registry


def replies(messages: list[Message]) -> dict[str, str]:
    return {m.tool_call_id or "": m.content or "" for m in messages if m.role == "tool"}


async def test_a_call_by_the_providers_alias_runs_the_tool(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    ran: list[str] = []
    model = write_script(
        tmp_path,
        [
            calls(
                ("a", "getWeather", {"city": "Oslo"}),  # this run's provider: scripted
                ("b", "weatherNow", {"city": "Rome"}),  # Anthropic's alias: not here
                ("c", "GETWEATHER", {"city": "Bonn"}),  # aliases match exactly
                ("d", "get_weather", {"city": "Lima"}),  # the name always works
            ),
            answer("done"),
        ],
    )
    async with running_worker(client, weather_registry(ran), task_queue):
        run = await DurableTools(client, task_queue).start("weather", model=model)
        result = await asyncio.wait_for(run.result(), 30)
        answers = replies(await run.conversation())
        timeline = {record.call_id: record for record in await run.timeline()}
    assert result.status == RunStatus.COMPLETED
    assert ran == ["Oslo", "Lima"]
    assert answers["a"] == "sunny in Oslo" and answers["d"] == "sunny in Lima"
    for unknown in ("b", "c"):
        assert "no tool of that name is available" in answers[unknown]
        # The list offers the names this provider's model may call.
        assert "getWeather" in answers[unknown] and "sendMail" in answers[unknown]
    assert timeline["a"].tool == "get_weather" and timeline["a"].status == "completed"
    assert timeline["b"].status == "invalid"


async def test_an_alias_call_passes_the_tools_approval_gate(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    ran: list[str] = []
    model = write_script(tmp_path, [calls(("m", "sendMail", {"to": "bob"})), answer("done")])
    async with running_worker(client, weather_registry(ran), task_queue):
        run = await DurableTools(client, task_queue).start("mail bob", model=model)
        snapshot = await wait_for(run, lambda s: bool(s.pending_approvals))
        assert ran == []  # the alias did not slip past the approval
        pending = snapshot.pending_approvals[0]
        assert pending.tool == "send_mail" and pending.call_id == "m"
        await run.approve("m", decider="alice")
        result = await asyncio.wait_for(run.result(), 30)
        await assert_not_wedged(run.handle)
    assert result.status == RunStatus.COMPLETED and ran == ["mail bob"]


async def test_an_anthropic_model_calls_a_tool_by_its_anthropic_alias(
    client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[str] = []

    def answer_by_turn(request: RecordedRequest) -> CannedResponse:
        if len(request.json["messages"]) == 1:
            return CannedResponse(body=message(tool_use("toolu_1", "weatherNow", {"city": "Oslo"})))
        return CannedResponse(body=message(text("It is sunny.")))

    with FakeAnthropicServer(answer_by_turn) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "k-test-aliases-0123")
        try:
            async with running_worker(client, weather_registry(ran), task_queue):
                run = await DurableTools(client, task_queue).start(
                    "Weather in Oslo?", model="anthropic:claude-test"
                )
                result = await asyncio.wait_for(run.result(), 30)
        finally:
            await aclose_shared_clients()
        first, second = server.requests[0].json, server.requests[-1].json
    assert result.status == RunStatus.COMPLETED and result.final_answer == "It is sunny."
    # The model is shown the tool under the name its provider knows it by.
    assert "weatherNow" in [tool["name"] for tool in first["tools"]]
    assert ran == ["Oslo"]
    # The tool result went back to Anthropic under the tool_use id the model gave.
    results = [
        block
        for msg in second["messages"]
        if isinstance(msg["content"], list)
        for block in msg["content"]
        if block.get("type") == "tool_result"
    ]
    assert results and results[0]["tool_use_id"] == "toolu_1"
    assert "sunny in Oslo" in str(results[0]["content"])
