"""The per-user cap on threads, on a real dev server: a message that would start a thread
past `AguiConfig.max_threads_per_user` is refused with 429 before anything starts, while
the user's open threads and other users' go on."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from agui_support import chat, run_input, user
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from durable_tools.agui import session_id
from support import answer


async def test_a_user_past_the_cap_cannot_start_another_thread(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    script = [answer(f"answer {n}") for n in range(8)]
    prefix = f"cap{uuid.uuid4().hex[:6]}"  # this test's sessions only
    async with chat(
        client, task_queue, tmp_path, script, max_threads_per_user=2, session_prefix=prefix
    ) as endpoint:
        first, second = (f"t-{uuid.uuid4().hex[:8]}" for _ in range(2))
        for thread in (first, second):
            events = await endpoint.run(endpoint.alice, run_input(thread, [user("hi")]))
            assert events[-1]["type"] == "RUN_FINISHED"
        third = f"t-{uuid.uuid4().hex[:8]}"
        for _ in range(100):  # visibility counts the two sessions a moment after they start
            response = await endpoint.post(endpoint.alice, run_input(third, [user("hi")]))
            if response.status_code == 429:
                break
            assert response.status_code == 200
            # Refused later or not: this thread started, so use another for the next try.
            third = f"t-{uuid.uuid4().hex[:8]}"
            await asyncio.sleep(0.2)
        assert response.status_code == 429
        assert "the limit is 2" in response.json()["error"]
        try:
            await client.get_workflow_handle(session_id(prefix, "alice", third)).describe()
            raise AssertionError("a refused thread started")
        except RPCError as error:
            assert error.status == RPCStatusCode.NOT_FOUND
        # Her open threads go on; bob has threads of his own.
        again = await endpoint.run(endpoint.alice, run_input(first, [user("more", "m-more")]))
        assert again[-1]["type"] == "RUN_FINISHED"
        bobs = await endpoint.run(endpoint.bob, run_input(third, [user("hi")]))
        assert bobs[-1]["type"] == "RUN_FINISHED"
