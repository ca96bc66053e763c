"""Stopping a watcher (`follow_stream`): a client that goes away leaves nothing polling."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from temporalio.client import Client

from durable_tools.streaming._watch import follow_stream  # what AgentRun.stream() returns


async def test_a_watcher_stops_when_its_cancellation_meets_a_progress_answer(
    client: Client,
) -> None:
    """The cancellation of a watcher whose client went away arrives in the same turn of
    the event loop as the answer of a progress poll. On Python 3.11 `asyncio.wait_for`
    then returned the answer and swallowed the cancellation: the poll went on for ever,
    and the watcher never stopped (an AG-UI test saw its pump stuck "cancelling")."""
    # A run that stays running: no worker polls its task queue.
    handle = await client.start_workflow(
        "NoWorkerRunsThis", id=f"watched-{uuid.uuid4().hex}", task_queue=f"nobody-{uuid.uuid4()}"
    )
    polls = 0
    polled = asyncio.Event()
    answer: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()

    async def progress() -> list[Any]:
        nonlocal polls
        polls += 1
        polled.set()
        return await answer

    events = follow_stream(client, handle.id, progress=progress)
    watcher = asyncio.ensure_future(anext(events))
    try:
        await asyncio.wait_for(polled.wait(), 10)
        answer.set_result([])  # the poll answers ...
        watcher.cancel()  # ... as the client goes away
        done, _ = await asyncio.wait({watcher}, timeout=10)
        assert watcher in done, "the watcher did not stop"
        after = polls
        await asyncio.sleep(1.5)  # three poll intervals
        assert polls == after, "the watcher's progress poll went on after it stopped"
    finally:
        await handle.terminate()
