"""Helpers of the live-token tests: a gated streaming fake provider, history figures."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

from temporalio.client import WorkflowHandle

from durable_tools import AgentRun
from durable_tools.streaming import StreamEvent
from fake_openai import CannedResponse, RecordedRequest, chat_completion, chat_stream, tool_call

FIRST = ["The weather ", "in Paris "]
"""What the final answer streams before the gate."""
REST = ["is 18C ", "and sunny."]
ANSWER = "".join(FIRST + REST)


class GatedProvider:
    """A Chat Completions responder: a tool call, then a final answer streamed in pieces.

    The final answer's stream holds after `FIRST` until `gate` is set, so a test can see
    the first deltas arrive while the model call is still in flight. With `stream=False`
    requests (a run without streaming) it answers whole, with the same message.
    """

    def __init__(self, *, tool_call_first: bool = True) -> None:
        self.gate = threading.Event()
        self.tool_call_first = tool_call_first
        self.final_at: float | None = None
        """When the final answer's stream began (`time.monotonic()`), for latency figures."""

    def __call__(self, request: RecordedRequest) -> CannedResponse:
        body = request.json
        streaming = bool(body.get("stream"))
        if self.tool_call_first and not any(m["role"] == "tool" for m in body["messages"]):
            args = json.dumps({"city": "Paris"})
            if not streaming:
                return CannedResponse(
                    body=chat_completion(tool_calls=[tool_call("c1", "weather", args)])
                )
            return CannedResponse(sse=chat_stream(None, [("c1", "weather", [args[:5], args[5:]])]))
        if not streaming:
            return CannedResponse(body=chat_completion(ANSWER))
        self.final_at = time.monotonic()
        pieces = chat_stream(FIRST + REST)
        # chunk 0 is the role; then one chunk per piece: hold after the FIRST pieces.
        return CannedResponse(sse=[*pieces[: 1 + len(FIRST)], self.gate, *pieces[1 + len(FIRST) :]])


async def collect(
    run: AgentRun, into: list[StreamEvent], seen: asyncio.Event | None = None
) -> None:
    """Append the run's live events to `into` until `run_ended`; set `seen` at the first text."""
    async for event in run.stream():
        into.append(event)
        if seen is not None and event.kind == "text":
            seen.set()


async def history_figures(handle: WorkflowHandle[Any, Any]) -> tuple[int, int]:
    """(events, bytes) of a workflow's history."""
    history = await handle.fetch_history()
    return len(history.events), sum(event.ByteSize() for event in history.events)


def text_of(events: list[StreamEvent]) -> str:
    """The text of the last message started in `events` (after any restart)."""
    text: list[str] = []
    for event in events:
        if event.kind in ("message_start", "restarted"):
            text = []
        elif event.kind == "text":
            text.append(event.text)
    return "".join(text)
