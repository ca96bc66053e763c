"""A run with `stream_tokens`: its text arrives live, its history stays the same size.

Real dev server, real worker, a fake OpenAI-compatible provider speaking the Chat
Completions SSE format through the official SDK.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest
from stream_support import ANSWER, FIRST, GatedProvider, collect, history_figures, text_of
from temporalio.client import Client

from durable_tools import AgentConfig, DurableTools, RunStatus, ToolContext, ToolRegistry
from durable_tools.models import aclose_shared_clients
from durable_tools.streaming import StreamEvent, stream_id
from fake_openai import FakeOpenAIServer
from support import assert_not_wedged, running_worker

HISTORY_SLACK_EVENTS = 6
"""Events a streaming run may add: the `close` signal to its stream and its task."""
HISTORY_SLACK_BYTES = 1_500


@pytest.fixture
def provider() -> GatedProvider:
    return GatedProvider()


@pytest.fixture
def server(provider: GatedProvider, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(provider) as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-streaming-0123")
        yield fake
        provider.gate.set()


def registry(progress_seen: asyncio.Event | None = None) -> ToolRegistry:
    tools = ToolRegistry()

    @tools.tool(read_only=True)
    async def weather(city: str, ctx: ToolContext) -> str:
        """Current weather in a city."""
        ctx.progress(f"asking the station in {city}", fraction=0.5)
        if progress_seen is not None:
            await asyncio.wait_for(progress_seen.wait(), 30)
        return "18C, sunny"

    return tools


async def test_a_streamed_run_shows_text_live_and_keeps_its_history_size(
    client: Client, task_queue: str, server: FakeOpenAIServer, provider: GatedProvider
) -> None:
    progress_seen = asyncio.Event()
    tools = DurableTools(client, task_queue)
    try:
        async with running_worker(client, registry(progress_seen), task_queue):
            run = await tools.start(
                "Weather in Paris?", config=AgentConfig(model="openai:gpt-t", stream_tokens=True)
            )
            events: list[StreamEvent] = []
            first_text = asyncio.Event()

            async def watch() -> None:
                async for event in run.stream():
                    events.append(event)
                    if event.kind == "tool_progress":
                        progress_seen.set()
                    if event.kind == "text" and event.turn == 2:
                        first_text.set()

            watcher = asyncio.create_task(watch())
            await asyncio.wait_for(first_text.wait(), 60)
            assert provider.final_at is not None
            first_delta_after = time.monotonic() - provider.final_at
            # The model call is still in flight: the provider holds its stream at the gate.
            assert not provider.gate.is_set()
            assert not any(e.kind == "message_end" and e.turn == 2 for e in events)

            late: list[StreamEvent] = []
            late_seen = asyncio.Event()
            late_watcher = asyncio.create_task(collect(run, late, late_seen))
            await asyncio.wait_for(late_seen.wait(), 30)
            # A watcher attached late gets the message so far first.
            assert text_of(late) == "".join(FIRST)

            provider.gate.set()
            result = await asyncio.wait_for(run.result(), 60)
            await asyncio.wait_for(watcher, 30)
            await asyncio.wait_for(late_watcher, 30)
            await assert_not_wedged(run.handle)
            stream_handle = client.get_workflow_handle(stream_id(run.run_id))
            await assert_not_wedged(stream_handle)
            # The run closed its stream when it ended.
            await asyncio.wait_for(stream_handle.result(), 30)
            streamed = await history_figures(run.handle)
            stream_history = await history_figures(
                client.get_workflow_handle(stream_id(run.run_id))
            )

            # The same run without streaming, same provider answers.
            plain = await tools.start("Weather in Paris?", config=AgentConfig(model="openai:gpt-t"))
            assert (await asyncio.wait_for(plain.result(), 60)).final_answer == ANSWER
            await assert_not_wedged(plain.handle)
            unstreamed = await history_figures(plain.handle)
    finally:
        await aclose_shared_clients()

    assert result.status == RunStatus.COMPLETED and result.final_answer == ANSWER
    assert text_of(events) == ANSWER and text_of(late) == ANSWER
    assert [e.kind for e in events if e.kind in ("run_ended",)] == ["run_ended"]
    assert events[-1].kind == "run_ended" and events[-1].text == "COMPLETED"
    progress = [e for e in events if e.kind == "tool_progress"]
    assert progress and progress[0].tool == "weather" and "station in Paris" in progress[0].text
    assert not any(e.kind == "restarted" for e in events)
    print(
        f"\nhistory with streaming: {streamed[0]} events, {streamed[1]} bytes; "
        f"without: {unstreamed[0]} events, {unstreamed[1]} bytes; "
        f"stream workflow: {stream_history[0]} events, {stream_history[1]} bytes; "
        f"first delta seen {first_delta_after * 1000:.0f} ms after the provider sent it"
    )
    assert streamed[0] <= unstreamed[0] + HISTORY_SLACK_EVENTS
    assert streamed[1] <= unstreamed[1] + HISTORY_SLACK_BYTES


SECRET = "sk-live-SENTINEL-0f9e8d7c6b"


async def test_nothing_a_watcher_sees_carries_a_worker_secret(
    client: Client, task_queue: str, server: FakeOpenAIServer, provider: GatedProvider
) -> None:
    provider.gate.set()
    progress_seen = asyncio.Event()
    tools = ToolRegistry()

    @tools.tool(read_only=True)
    async def weather(city: str, ctx: ToolContext) -> str:
        """Current weather in a city."""
        key = ctx.secret("api_key")
        ctx.progress(f"GET https://station.example/{city}?key={key}", partial={"auth": key})
        await asyncio.wait_for(progress_seen.wait(), 30)
        return "18C, sunny"

    events: list[StreamEvent] = []
    try:
        async with running_worker(client, tools, task_queue, secrets={"api_key": SECRET}):
            run = await DurableTools(client, task_queue).start(
                "Weather?", config=AgentConfig(model="openai:gpt-t", stream_tokens=True)
            )
            async for event in run.stream():
                events.append(event)
                if event.kind == "tool_progress":
                    progress_seen.set()
            progress = await run.progress()
            await assert_not_wedged(run.handle)
            histories = [
                await handle.fetch_history()
                for handle in (run.handle, client.get_workflow_handle(stream_id(run.run_id)))
            ]
    finally:
        await aclose_shared_clients()
    shown = [e.text for e in events if e.kind == "tool_progress"]
    assert shown and "[redacted]" in shown[0] and SECRET not in "".join(shown)
    assert SECRET not in repr(progress)
    assert text_of(events) == ANSWER
    for history in histories:
        raw = b"".join(event.SerializeToString() for event in history.events)
        assert SECRET.encode() not in raw
