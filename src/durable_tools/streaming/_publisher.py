"""The model activity's side of a token stream: batch text deltas, signal them out.

Text deltas are buffered and flushed every `BATCH_SECONDS` as one `StreamBatch`, sent
with signal-with-start to the run's stream workflow (started on first use). Publishing
is best effort: the final message returned by the activity (and kept in the run's
history) is the truth, so a stream that cannot be reached is logged, never raised.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from types import TracebackType
from typing import Self

from temporalio import activity
from temporalio.client import Client

from durable_tools.streaming._types import (
    MAX_BATCH_EVENTS,
    MAX_DELTA_CHARS,
    MAX_STREAMED_CHARS,
    PUBLISH_SIGNAL,
    STREAM_WORKFLOW,
    StreamBatch,
    StreamEvent,
    StreamInput,
    stream_id,
)

__all__ = ["BATCH_SECONDS", "TokenPublisher"]

BATCH_SECONDS = 0.1
"""How often buffered text is flushed to the stream."""

_log = logging.getLogger(__name__)


class TokenPublisher:
    """Publishes one model message's text, as it is generated, to the run's stream.

    Use as an async context manager around the model call: entering publishes
    `message_start`, `text(delta)` buffers, leaving flushes and publishes `message_end`.

    Args:
        client: The worker's client.
        run_id: The agent run (its stream is `<run_id>/stream`).
        task_queue: Where the stream workflow runs (the run's queue).
        turn: The model turn (1-based).
        publisher: Who publishes (the activity id and attempt), for deduplication.
        attempt: The activity attempt; above 1 tells watchers the message restarted.
        interval: Seconds between flushes.
    """

    def __init__(
        self,
        client: Client,
        *,
        run_id: str,
        task_queue: str,
        turn: int,
        publisher: str,
        attempt: int = 1,
        interval: float = BATCH_SECONDS,
    ) -> None:
        self._client = client
        self._run_id = run_id
        self._task_queue = task_queue
        self._turn = turn
        self._attempt = attempt
        self._publisher = publisher
        self._interval = interval
        self._buffer: list[str] = []
        self._events: list[StreamEvent] = []
        self._streamed = 0
        self._elided = False
        self._seq = 0
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._failed = False
        self._closing = False
        self.finish_reason: str | None = None

    @classmethod
    def for_activity(cls, run_id: str, turn: int) -> TokenPublisher:
        """A publisher for the running model activity (client, queue, attempt from it)."""
        info = activity.info()
        return cls(
            activity.client(),
            run_id=run_id,
            task_queue=info.task_queue,
            turn=turn,
            publisher=f"{info.workflow_run_id}/{info.activity_id}/{info.attempt}",
            attempt=info.attempt,
        )

    async def __aenter__(self) -> Self:
        self._events.append(self._event("message_start"))
        await self._flush()  # at once: watchers see the turn (or its restart) begin
        self._task = asyncio.create_task(self._flusher())
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if isinstance(exc, asyncio.CancelledError):
            # The call was cancelled (the run ended, or the activity timed out): publish
            # nothing more, or a late publish could start a stream for an ended run.
            if self._task is not None:
                self._task.cancel()
            return
        if self._task is not None:
            # Let a flush in flight finish (cancelling it mid-signal could lose a batch).
            self._closing = True
            self._wake.set()
            await self._task
        self._take_text()  # on a failure too: what was said before it (a retry restarts)
        if exc is None:
            end = self._event("message_end")
            end.finish_reason = self.finish_reason
            self._events.append(end)
        await self._flush()

    def text(self, delta: str) -> None:
        """Buffer a text delta (called by the adapter for each chunk)."""
        if not delta or self._elided:
            return
        room = MAX_STREAMED_CHARS - self._streamed
        if len(delta) > room:
            delta = delta[:room]
            self._elided = True
        self._streamed += len(delta)
        if delta:
            self._buffer.append(delta)
        if self._elided:
            self._take_text()
            self._events.append(self._event("elided"))
            self._wake.set()

    def _event(self, kind: str) -> StreamEvent:
        return StreamEvent.model_validate(
            {"kind": kind, "turn": self._turn, "attempt": self._attempt}
        )

    def _take_text(self) -> None:
        text = "".join(self._buffer)
        self._buffer.clear()
        for start in range(0, len(text), MAX_DELTA_CHARS):
            event = self._event("text")
            event.text = text[start : start + MAX_DELTA_CHARS]
            self._events.append(event)

    async def _flusher(self) -> None:
        while not self._closing:
            # `asyncio.timeout`, not `wait_for`: on Python 3.11 `wait_for` swallows a cancellation
            # that arrives with its result, and this loop would go on after its task was cancelled.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._interval):
                    await self._wake.wait()
            self._wake.clear()
            self._take_text()
            await self._flush()

    async def _flush(self) -> None:
        while self._events and not self._failed:
            events = self._events[:MAX_BATCH_EVENTS]
            del self._events[:MAX_BATCH_EVENTS]
            self._seq += 1
            batch = StreamBatch(publisher=self._publisher, seq=self._seq, events=events)
            try:
                await self._client.start_workflow(
                    STREAM_WORKFLOW,
                    StreamInput(run_id=self._run_id),
                    id=stream_id(self._run_id),
                    task_queue=self._task_queue,
                    start_signal=PUBLISH_SIGNAL,
                    start_signal_args=[batch],
                    static_summary=f"live tokens of run {self._run_id}",
                )
            except asyncio.CancelledError:
                raise
            except Exception as error:  # the stream is a view; the history is the record
                _log.warning(
                    "run %s: token stream unavailable, not streaming this message: %s",
                    self._run_id,
                    error,
                )
                self._failed = True
                self._events.clear()
