"""A worker killed mid-stream: the model call is retried, watchers see the message restart,
and the run's history keeps only the retried (final) message."""

from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path

import pytest
from stream_support import ANSWER, FIRST, REST, history_figures, text_of
from temporalio.client import Client

from durable_tools import AgentConfig, DurableTools, RunStatus
from durable_tools.streaming import StreamEvent, stream_id
from durable_tools.tools._catalog_pack import CATALOG_PACKED_ACTIVITY
from fake_openai import CannedResponse, FakeOpenAIServer, RecordedRequest, chat_stream
from support import assert_not_wedged, local_activity_types, scheduled_activities

sys.path.insert(0, str(Path(__file__).parents[1] / "reliability"))
from subprocess_workers import WorkerProcess, wait_until


@pytest.mark.slow  # ~25 s: a worker process, its death, the heartbeat timeout, a second one
async def test_a_worker_killed_mid_stream_restarts_the_message(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    held = threading.Event()
    lost = ["The weather ", "in Rome "]  # what the doomed attempt says before it dies

    def answer(request: RecordedRequest) -> CannedResponse:
        pieces = chat_stream(lost if len(server.requests) == 1 else FIRST + REST)
        if len(server.requests) == 1:
            return CannedResponse(sse=[*pieces[:3], held])  # never finishes: the worker dies
        return CannedResponse(sse=pieces)

    server = FakeOpenAIServer(answer)
    address = client.service_client.config.target_host
    work = tmp_path / "work"
    config = AgentConfig(model="openai:gpt-test", stream_tokens=True, model_heartbeat_seconds=2)
    events: list[StreamEvent] = []
    with server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test-restart-0123"}
        first = WorkerProcess(address, task_queue, work, env=env)
        second: WorkerProcess | None = None
        try:
            await first.ready()
            run = await DurableTools(client, task_queue).start("Weather?", config=config)
            seen = asyncio.Event()

            async def watch() -> None:
                async for event in run.stream():
                    events.append(event)
                    if event.kind == "text":
                        seen.set()

            watcher = asyncio.create_task(watch())
            await asyncio.wait_for(seen.wait(), 60)
            await wait_until(lambda: text_of(events) == "".join(lost), 30, "the lost deltas")
            first.kill()
            second = WorkerProcess(address, task_queue, work, env=env)
            await second.ready()
            result = await asyncio.wait_for(run.result(), 90)
            await asyncio.wait_for(watcher, 30)
            history = await run.handle.fetch_history()
            await assert_not_wedged(run.handle)
            await assert_not_wedged(client.get_workflow_handle(stream_id(run.run_id)))
            figures = await history_figures(run.handle)
        finally:
            held.set()
            if second is not None:
                second.stop()
            if first.process.poll() is None:
                first.stop()
    assert result.status == RunStatus.COMPLETED and result.final_answer == ANSWER
    kinds = [e.kind for e in events]
    restart = kinds.index("restarted")
    assert events[restart].attempt == 2
    assert "".join(e.text for e in events[:restart] if e.kind == "text") == "".join(lost)
    assert text_of(events) == ANSWER  # after the marker: the retried message only
    # One model activity (retried inside it), one result in history: the retried message.
    assert scheduled_activities(history) == ["durable_tools.model"]
    assert local_activity_types(history) == [CATALOG_PACKED_ACTIVITY]  # no round trip
    assert b"in Rome" not in b"".join(e.SerializeToString() for e in history.events)
    print(f"\nrestarted run history: {figures[0]} events, {figures[1]} bytes")
