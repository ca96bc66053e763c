"""The companion workflow that holds a run's live token stream: `<run-id>/stream`.

The agent run's own history keeps only final messages. Text deltas go here instead: the
model activity signals batches (every ~100 ms) with signal-with-start, and watchers
long-poll through `temporalio.contrib.workflow_streams` (updates, and a query once the
stream has ended). This workflow's history grows with every batch, so it continues as
new after `MAX_STREAM_EVENTS` events, carrying only the current message's items: a
watcher attached late still sees the message so far, nothing older is kept.

It ends when the run signals `close` (the run ended), or after `IDLE_SECONDS` without a
publish (a run terminated from outside never says goodbye); a later model call of the
same run starts it again. Every handler checks its input: nothing sent here can fail a
workflow task.
"""

# No `from __future__ import annotations`: the sandbox re-imports this module per run.

from datetime import timedelta
from typing import Any

from pydantic import ValidationError
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from temporalio.contrib.workflow_streams import WorkflowStream

    from durable_tools.streaming._types import (
        PUBLISH_SIGNAL,
        STREAM_TOPIC,
        STREAM_WORKFLOW,
        StreamBatch,
        StreamInput,
        stream_id,
    )

__all__ = [
    "IDLE_SECONDS",
    "MAX_PUBLISHERS",
    "MAX_STREAM_EVENTS",
    "TokenStreamWorkflow",
    "close_stream",
]

MAX_STREAM_EVENTS = StreamInput.model_fields["continue_after_events"].default
"""History length after which the stream continues as new by default (the server's own
suggestion comes later; a stream has no reason to keep old batches)."""
IDLE_SECONDS = 3_600.0
"""A stream nobody published to for this long ends by itself."""
MAX_PUBLISHERS = 64
"""Publishers remembered for deduplication (the oldest are forgotten first)."""

# The library's own publish signal takes base64 payloads it decodes without checks (a
# malformed one would fail the workflow task); publishes come through PUBLISH_SIGNAL.
_LIBRARY_PUBLISH = "__temporal_workflow_stream_publish"


@workflow.defn(name=STREAM_WORKFLOW)
class TokenStreamWorkflow:
    """Hosts a `WorkflowStream` of `StreamEvent`s for one agent run."""

    @workflow.init
    def __init__(self, input: StreamInput) -> None:
        self._input = input
        self._stream = WorkflowStream(input.stream_state)
        workflow.set_signal_handler(_LIBRARY_PUBLISH, self._ignore)
        self._topic = self._stream.topic(STREAM_TOPIC)
        self._publishers = dict(input.publishers)
        self._message_offset = input.message_offset
        self._previous_offset = input.previous_offset
        self._offset = input.offset
        self._closed = input.closed
        self._published = 0

    @workflow.run
    async def run(self, input: StreamInput) -> None:
        while not self._closed:
            before = self._published
            try:
                await workflow.wait_condition(
                    lambda: self._closed or self._too_long(), timeout=IDLE_SECONDS
                )
            except TimeoutError:
                if self._published == before:
                    break  # idle: the run is gone or paused; a new publish restarts us
                continue
            if not self._closed and self._too_long():
                # Carry the current message and the one before (a watcher a little behind
                # still gets its end); everything older is gone.
                self._stream.truncate(self._previous_offset)
                await self._stream.continue_as_new(
                    lambda state: [
                        self._input.carried(
                            stream_state=state,
                            publishers=self._publishers,
                            message_offset=self._message_offset,
                            previous_offset=self._previous_offset,
                            offset=self._offset,
                        )
                    ],
                    publisher_ttl=timedelta(seconds=IDLE_SECONDS),
                )
        self._stream.detach_pollers()
        await workflow.wait_condition(workflow.all_handlers_finished)

    def _too_long(self) -> bool:
        info = workflow.info()
        return (
            info.get_current_history_length() >= self._input.continue_after_events
            or info.is_continue_as_new_suggested()
        )

    @workflow.signal(name=PUBLISH_SIGNAL)
    def publish(self, batch: Any) -> None:
        """Append a batch of events; a repeated or malformed batch is dropped."""
        try:
            checked = StreamBatch.model_validate(batch)
        except ValidationError:
            workflow.logger.warning("token stream: dropped a malformed publish")
            return
        if self._publishers.get(checked.publisher, 0) >= checked.seq:
            return  # delivered twice (a retried signal)
        self._publishers[checked.publisher] = checked.seq
        while len(self._publishers) > MAX_PUBLISHERS:
            del self._publishers[next(iter(self._publishers))]
        self._published += 1
        for event in checked.events:
            if event.kind == "message_start":
                # A new message (or a retried one): late watchers start here.
                self._previous_offset = self._message_offset
                self._message_offset = self._offset
            self._topic.publish(event)
            self._offset += 1

    @workflow.query
    def message_offset(self) -> int:
        """Where the current message starts: a watcher attaching now subscribes from here."""
        return self._message_offset

    @workflow.signal
    def close(self, reason: Any = None) -> None:
        """The run ended: release the watchers and end the stream."""
        self._closed = True

    def _ignore(self, *args: Any) -> None:
        workflow.logger.warning("token stream: publishes go through %s", PUBLISH_SIGNAL)


async def close_stream(run_id: str) -> None:
    """End a run's token stream (from the run's workflow, when the run ends).

    Adds a signal to the run's history only when the run streams tokens. A stream that
    never started (no model call streamed) or already ended is fine: nothing to close.
    """
    try:
        await workflow.get_external_workflow_handle(stream_id(run_id)).signal("close")
    except Exception:  # not found or closed: the stream is gone already
        workflow.logger.debug("token stream of %s was not running", run_id)
