"""The stream workflow on its own: bounded by continue-as-new, total on junk input."""

from __future__ import annotations

import asyncio
import uuid

from temporalio.client import Client, WorkflowHandle

from durable_tools import ToolRegistry
from durable_tools.streaming import STREAM_WORKFLOW, StreamEvent
from durable_tools.streaming._types import PUBLISH_SIGNAL, STREAM_TOPIC, StreamBatch, StreamInput
from durable_tools.streaming._watch import subscribe_stream
from support import running_worker, workflow_task_failures


def text(turn: int, piece: str) -> StreamEvent:
    return StreamEvent(kind="text", turn=turn, text=piece)


async def publish(handle: WorkflowHandle[None, None], seq: int, *events: StreamEvent) -> None:
    await handle.signal(PUBLISH_SIGNAL, StreamBatch(publisher="p", seq=seq, events=list(events)))


async def read(client: Client, workflow_id: str, count: int, start: int = 0) -> list[StreamEvent]:
    items: list[StreamEvent] = []
    async for event in subscribe_stream(client, workflow_id, from_offset=start, interval=0.1):
        items.append(event)
        if len(items) == count:
            break
    return items


async def assert_only_races(handle: WorkflowHandle[None, None]) -> None:
    """No workflow task of the stream's current run failed except on a lost race.

    The server refuses a continue-as-new once when publishes arrived meanwhile
    (`UnhandledCommand`); the task is retried and goes through. Any other failure is a
    bug (and a repeated one a wedged stream).
    """
    failures = workflow_task_failures(await handle.fetch_history())
    assert all("UnhandledCommand" in failure for failure in failures), failures


async def test_the_stream_continues_as_new_and_keeps_only_the_current_message(
    client: Client, task_queue: str
) -> None:
    workflow_id = f"run-{uuid.uuid4()}/stream"
    async with running_worker(client, ToolRegistry(), task_queue):
        handle: WorkflowHandle[None, None] = await client.start_workflow(
            STREAM_WORKFLOW,
            StreamInput(run_id="run", continue_after_events=50),
            id=workflow_id,
            task_queue=task_queue,
        )
        follower = asyncio.create_task(read(client, workflow_id, 1 + 60 + 1 + 3))
        await publish(handle, 1, StreamEvent(kind="message_start", turn=1))
        for seq in range(2, 62):  # 60 batches: more history than one run may hold
            await publish(handle, seq, text(1, f"{seq} "))
        await publish(handle, 62, StreamEvent(kind="message_start", turn=2))
        await publish(handle, 63, text(2, "a "), text(2, "b "), text(2, "c"))
        await publish(handle, 63, text(2, "repeated batch"))  # a retried signal: dropped
        followed = await asyncio.wait_for(follower, 60)
        start = await handle.query("message_offset", result_type=int)
        late = await asyncio.wait_for(read(client, workflow_id, 4, start), 30)
        description = await handle.describe()
        runs = description.raw_description.workflow_execution_info
        await handle.signal("close")
        await asyncio.wait_for(handle.result(), 30)
        await assert_only_races(handle)
        history = await handle.fetch_history()
    assert runs.first_run_id != description.run_id  # it continued as new
    assert len(history.events) < 100
    assert "".join(e.text for e in followed if e.turn == 1) == "".join(
        f"{seq} " for seq in range(2, 62)
    )
    assert [e.text for e in followed[-3:]] == ["a ", "b ", "c"]
    # A late subscriber starts at the current message.
    assert [e.kind for e in late] == ["message_start", "text", "text", "text"]
    assert late[0].turn == 2


async def test_junk_sent_to_the_stream_never_fails_its_workflow_task(
    client: Client, task_queue: str
) -> None:
    workflow_id = f"run-{uuid.uuid4()}/stream"
    async with running_worker(client, ToolRegistry(), task_queue):
        handle: WorkflowHandle[None, None] = await client.start_workflow(
            STREAM_WORKFLOW, StreamInput(run_id="run"), id=workflow_id, task_queue=task_queue
        )
        for junk in (None, 7, "text", {"publisher": "p", "seq": 0, "events": []}, [1, 2]):
            await handle.signal(PUBLISH_SIGNAL, junk)
        oversized = {"publisher": "p", "seq": 1, "events": [{"kind": "text"}] * 65}
        await handle.signal(PUBLISH_SIGNAL, oversized)
        await handle.signal(PUBLISH_SIGNAL, {"publisher": "p", "seq": 1, "events": [{"kind": "?"}]})
        # The library's own publish signal, with a payload it cannot decode.
        await handle.signal(
            "__temporal_workflow_stream_publish",
            {"items": [{"topic": STREAM_TOPIC, "data": "%%% not base64"}], "publisher_id": "x"},
        )
        await handle.signal("close", {"any": "thing"})
        await publish(handle, 1, StreamEvent(kind="message_start", turn=1))
        await asyncio.wait_for(handle.result(), 30)
        # The publish right after `close` can race the completion (`UnhandledCommand`,
        # retried at once); junk itself must fail no task.
        await assert_only_races(handle)
