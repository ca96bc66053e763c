"""Frontend tools on a real dev server: a tool the client declares in `tools` is a callback
tool of the thread's session. The model calls it, the AG-UI run ends with the call (its
arguments whole) for the front end to run, and the next input's tool message delivers the
result through the callback path; a replayed result answers once, and a forged, foreign
or second result is a clear RUN_ERROR that delivers nothing."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from agui_support import (
    WEATHER_TOOL,
    Chat,
    chat,
    chat_registry,
    of_type,
    run_input,
    tool_message,
    types,
    user,
)
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from durable_tools import AgentRun, DurableTools
from durable_tools.agui import session_id
from durable_tools.workflows import RunEvent
from support import answer, calls, wait_for


def _assistant_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The assistant message an AG-UI client keeps for a tool call it saw."""
    return {
        "id": f"a-{call_id}",
        "role": "assistant",
        "toolCalls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ],
    }


async def _answered(session: AgentRun) -> list[RunEvent]:
    """The callback answers the session took."""
    return [e for e in (await session.events_since(0)).events if e.event == "callback.answered"]


async def _ask_weather(endpoint: Chat, thread: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Alice asks; the AG-UI run ends with the frontend call. The message and the events."""
    asked = user("weather in Paris?")
    events = await endpoint.run(endpoint.alice, run_input(thread, [asked], tools=[WEATHER_TOOL]))
    return asked, events


async def test_a_frontend_tool_call_ends_the_run_and_its_result_goes_on(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    script = [calls(("c1", "showWeather", {"city": "Paris"})), answer("Sunny in Paris")]
    thread = f"t-{uuid.uuid4().hex[:8]}"
    async with chat(client, task_queue, tmp_path, script) as endpoint:
        asked, events = await _ask_weather(endpoint, thread)
        (start,) = of_type(events, "TOOL_CALL_START")
        assert start["toolCallId"] == "c1" and start["toolCallName"] == "showWeather"
        (args,) = of_type(events, "TOOL_CALL_ARGS")
        assert json.loads(args["delta"]) == {"city": "Paris"}  # whole, for the browser to run
        assert not of_type(events, "TOOL_CALL_RESULT")  # the browser's to produce
        finished = events[-1]
        assert finished["type"] == "RUN_FINISHED"
        assert finished["result"] == {"status": "awaiting_tools", "toolCalls": ["c1"]}
        assert finished["outcome"] == {"type": "success", "pendingToolCallIds": ["c1"]}

        history = [asked, _assistant_call("c1", "showWeather", {"city": "Paris"})]
        result = tool_message("c1", "21 C, sunny", "tm-1")
        body = run_input(thread, [*history, result], tools=[WEATHER_TOOL])
        events = await endpoint.run(endpoint.alice, body)
        assert events[-1]["type"] == "RUN_FINISHED", events[-1]
        assert events[-1]["result"]["answer"] == "Sunny in Paris"
        assert not of_type(events, "TOOL_CALL_START")  # shown in the run before

        session = DurableTools(client).run(session_id("agui", "alice", thread))
        (record,) = [r for r in await session.timeline() if r.call_id == "c1"]
        assert record.status == "completed" and "21 C, sunny" in (record.result or "")

        # The same input again (a client's retry): answered once, the answer follows.
        again = await endpoint.run(endpoint.alice, {**body, "runId": "run-retry"})
        assert again[-1]["type"] == "RUN_FINISHED", again[-1]
        assert len(await _answered(session)) == 1

        # Another result for the answered call (another tool message) delivers nothing.
        other = tool_message("c1", "snow", "tm-2")
        refused = await endpoint.run(
            endpoint.alice, run_input(thread, [*history, other], tools=[WEATHER_TOOL])
        )
        assert refused[-1]["type"] == "RUN_ERROR"
        assert refused[-1]["code"] == "TOOL_CALL_ANSWERED" and "c1" in refused[-1]["message"]

        # A user message later: the old tool message is history, not a delivery.
        later = [*history, result, user("thanks")]
        assert types(await endpoint.run(endpoint.alice, run_input(thread, later)))[-1] in (
            "RUN_FINISHED",
            "RUN_ERROR",  # the script has no third answer: the model's error, not ours
        )
        assert len(await _answered(session)) == 1


async def test_forged_and_foreign_tool_results_deliver_nothing(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    script = [
        calls(("c1", "showWeather", {"city": "Oslo"}), ("c2", "device_check", {"serial": "X"})),
        answer("done"),
    ]
    thread = f"t-{uuid.uuid4().hex[:8]}"
    parallel = {"strategy": {"mode": "parallel"}}  # both calls wait at once
    async with chat(client, task_queue, tmp_path, script, agent=parallel) as endpoint:
        asked = user("weather and device?")
        events = await endpoint.run(
            endpoint.alice, run_input(thread, [asked], tools=[WEATHER_TOOL])
        )
        assert events[-1]["result"]["toolCalls"] == ["c1"]  # not the operator's device_check
        session = DurableTools(client).run(session_id("agui", "alice", thread))
        snapshot = await wait_for(session, lambda s: len(s.pending_callbacks) == 2)
        assert {p.call_id: p.client for p in snapshot.pending_callbacks} == {
            "c1": True,
            "c2": False,
        }

        async def deliver(*results: dict[str, Any], token: str | None = None) -> dict[str, Any]:
            body = run_input(thread, [asked, *results], tools=[WEATHER_TOOL])
            response = await endpoint.post(token or endpoint.alice, body)
            if response.status_code != 200:
                return {"status": response.status_code, **response.json()}
            events = await endpoint.run(token or endpoint.alice, body)
            return events[-1]

        forged = await deliver(tool_message("c-forged", "x"))
        assert forged["code"] == "UNKNOWN_TOOL_CALL" and "c-forged" in forged["message"]
        foreign = await deliver(tool_message("c1", "ok"), tool_message("c2", "fine"))
        assert foreign["code"] == "FOREIGN_TOOL_CALL" and "c2" in foreign["message"]
        # Bob has no such thread: his request names his own session, which does not exist.
        bobs = await deliver(tool_message("c1", "bob's"), token=endpoint.bob)
        assert bobs["status"] == 404
        # Nothing was delivered by any of them: both calls still wait.
        snapshot = await session.status()
        assert {p.call_id for p in snapshot.pending_callbacks} == {"c1", "c2"}
        assert not await _answered(session)


def _tool(name: str, parameters: Any = None, description: str = "a tool") -> dict[str, Any]:
    tool: dict[str, Any] = {"name": name, "description": description}
    if parameters is not None:
        tool["parameters"] = parameters
    return tool


def _nested(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


async def test_hostile_tool_declarations_are_refused_before_any_run(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    thread = f"t-{uuid.uuid4().hex[:8]}"
    async with chat(client, task_queue, tmp_path, [answer("hi")]) as endpoint:

        async def refused(tools: list[dict[str, Any]]) -> str:
            response = await endpoint.post(
                endpoint.alice, run_input(thread, [user("hi")], tools=tools)
            )
            assert response.status_code == 400, (tools, response.text)
            return str(response.json()["error"])

        look_alikes = [
            "\uff4cookup",  # fullwidth l
            "l\u043e\u043ekup",  # Cyrillic o's
            "look\u200bup",  # a zero-width space
            "lookup\u0301",  # a combining accent
            "",
            "x" * 65,
            "show weather",
        ]
        for name in look_alikes:
            assert "ASCII" in await refused([_tool(name)]), name
        assert "case aside" in await refused([_tool("showWeather"), _tool("SHOWWEATHER")])
        assert "at most 32" in await refused([_tool(f"t{i}") for i in range(33)])
        big = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(900)}}
        assert "limit is 16,000 bytes" in await refused([_tool("big", big)])
        assert "deeper than 12" in await refused([_tool("deep", _nested(13))])
        regex = {"type": "object", "properties": {"a": {"type": "string", "pattern": "(a+)+$"}}}
        assert "'pattern'" in await refused([_tool("slow", regex)])
        nested = {
            "type": "object",
            "properties": {"a": {"type": "object", "patternProperties": {}}},
        }
        assert "'patternProperties'" in await refused([_tool("slow", nested)])
        remote = {"type": "object", "properties": {"a": {"$ref": "https://evil.test/s.json"}}}
        assert "local references" in await refused([_tool("remote", remote)])
        assert "object schema" in await refused([_tool("flat", {"type": "string"})])
        assert "valid JSON Schema" in await refused(
            [_tool("bad", {"type": "object", "properties": {"a": {"type": 5}}})]
        )
        assert "unicode" in await refused([_tool("desc", description="bad \ud800")])
        assert "at most 4000" in await refused([_tool("long", description="d" * 4_001)])

        async def delivery(*results: dict[str, Any]) -> tuple[int, str]:
            body = run_input(thread, [user("hi"), *results], tools=[WEATHER_TOOL])
            response = await endpoint.post(endpoint.alice, body)
            return response.status_code, str(response.json()["error"])

        huge = await delivery(tool_message("c1", "x" * 1_000_001))
        assert huge[0] == 413 and "1,000,000 bytes" in huge[1]
        assert (await delivery(tool_message("c1", "bad \ud800")))[0] == 400
        twice = await delivery(tool_message("c1", "a"), tool_message("c1", "b"))
        assert twice == (400, "two tool messages answer the same call: send one per call")
        long_id = await delivery(tool_message("c" * 257, "a"))
        assert long_id[0] == 400 and "toolCallId" in long_id[1]
        # A parameter may be called `pattern` (a name, not the keyword).
        named = {"type": "object", "properties": {"pattern": {"type": "string"}}}
        response = await endpoint.post(
            endpoint.alice,
            run_input(thread, [user("hi"), tool_message("c1", "a")], tools=[_tool("f", named)]),
        )
        assert response.status_code == 404  # past the tool's checks: no thread to deliver to
        # A delivery needs a thread of the user's: none yet.
        assert await delivery(tool_message("c1", "a")) == (404, f"no thread {thread!r} of yours")
        # Nothing started.
        assert not await _exists(client, session_id("agui", "alice", thread))


async def _exists(client: Client, workflow_id: str) -> bool:
    try:
        await client.get_workflow_handle(workflow_id).describe()
    except RPCError as error:
        assert error.status == RPCStatusCode.NOT_FOUND
        return False
    return True


async def test_a_frontend_tool_named_like_a_server_tool_is_refused(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    registry = chat_registry([])
    async with chat(client, task_queue, tmp_path, [answer("hi")], registry=registry) as endpoint:
        for name in ("LOOKUP", "pay", "Device_Check", "search_tools", "run_script"):
            thread = f"t-{uuid.uuid4().hex[:8]}"
            body = run_input(thread, [user("hi")], tools=[_tool(name)])
            response = await endpoint.post(endpoint.alice, body)
            assert response.status_code == 400, name
            assert "named like the server's tool" in response.json()["error"], name
            assert not await _exists(client, session_id("agui", "alice", thread))


async def test_without_the_registry_the_worker_leaves_a_clashing_tool_out(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # The model calls `LOOKUP`, declared by the client: the run has no such tool (the
    # server's `lookup` stands), so the model reads an unknown tool's repair, and the
    # session goes on to its answer: nothing is published for the browser.
    script = [calls(("c1", "LOOKUP", {"q": "x"})), answer("no such tool")]
    async with chat(client, task_queue, tmp_path, script) as endpoint:
        thread = f"t-{uuid.uuid4().hex[:8]}"
        body = run_input(thread, [user("hi")], tools=[_tool("LOOKUP"), WEATHER_TOOL])
        events = await endpoint.run(endpoint.alice, body)
        assert events[-1]["type"] == "RUN_FINISHED", events[-1]
        assert events[-1]["result"]["answer"] == "no such tool"
        session = DurableTools(client).run(session_id("agui", "alice", thread))
        (record,) = await session.timeline()
        assert (record.tool, record.status) == ("LOOKUP", "invalid")
        assert endpoint.ran == []
