"""Many chats at once through one endpoint: each AG-UI run follows its own session (its own
token stream, events and status) and none sees another's events."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

from agui_support import WEATHER_TOOL, chat, of_type, run_input, tool_message, user
from temporalio.client import Client

from durable_tools import DurableTools
from durable_tools.agui import session_id
from support import answer, calls

CHATS = 30


async def test_thirty_chats_at_once_each_get_their_own_answer(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    script = [calls(("c1", "lookup", {"q": "z"})), answer("z is found")]
    async with chat(client, task_queue, tmp_path, script) as endpoint:
        threads = [f"load-{n}-{uuid.uuid4().hex[:6]}" for n in range(CHATS)]
        runs = await asyncio.gather(
            *(
                endpoint.run(endpoint.alice, run_input(thread, [user(f"look up z ({n})")]))
                for n, thread in enumerate(threads)
            )
        )
    for thread, events in zip(threads, runs, strict=True):
        assert events[0]["threadId"] == thread and events[-1]["threadId"] == thread
        assert events[-1]["type"] == "RUN_FINISHED", events[-1]
        assert events[-1]["result"]["answer"] == "z is found"
        assert [e["toolCallId"] for e in of_type(events, "TOOL_CALL_START")] == ["c1"]
        assert [e["content"] for e in of_type(events, "TOOL_CALL_RESULT")] == ["found z"]
        text = "".join(e["delta"] for e in of_type(events, "TEXT_MESSAGE_CONTENT"))
        assert text == "z is found"  # once: no other chat's answer, no repeat
    assert endpoint.ran == ["lookup z"] * CHATS


async def test_frontend_tool_round_trips_in_many_threads_at_once(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    """Each thread's browser answers its own frontend tool call (sent twice, as a retrying
    client would): every call is answered once, with its own thread's result."""
    script = [calls(("c1", "showWeather", {"city": "Paris"})), answer("done")]
    async with chat(client, task_queue, tmp_path, script) as endpoint:

        async def round_trip(n: int) -> tuple[str, list[dict[str, Any]]]:
            thread = f"ft-{n}-{uuid.uuid4().hex[:6]}"
            asked = user(f"weather ({n})")
            first = await endpoint.run(
                endpoint.alice, run_input(thread, [asked], tools=[WEATHER_TOOL])
            )
            assert first[-1]["outcome"]["pendingToolCallIds"] == ["c1"], first[-1]
            result = tool_message("c1", f"sunny in thread {n}", f"tm-{n}")
            body = run_input(thread, [asked, result], tools=[WEATHER_TOOL])
            done = await asyncio.gather(*(endpoint.run(endpoint.alice, body) for _ in range(2)))
            return thread, [events[-1] for events in done]

        finished = await asyncio.gather(*(round_trip(n) for n in range(CHATS)))
        for n, (thread, ends) in enumerate(finished):
            assert [end["type"] for end in ends] == ["RUN_FINISHED"] * 2, ends
            session = DurableTools(client).run(session_id("agui", "alice", thread))
            (record,) = await session.timeline()
            assert record.result is not None and f"sunny in thread {n}" in record.result
            answered = [
                e for e in (await session.events_since(0)).events if e.event == "callback.answered"
            ]
            assert len(answered) == 1
