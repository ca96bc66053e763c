"""Many chats at once through one endpoint: each AG-UI run follows its own session (its own
token stream, events and status) and none sees another's events."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from agui_support import chat, of_type, run_input, user
from temporalio.client import Client

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
