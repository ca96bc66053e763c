"""What travels through a run's token stream: events, publish batches, the stream's input.

Plain pydantic data, shared (passed through the sandbox) by the model activity that
publishes, the companion stream workflow that keeps them, and the clients that watch.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, Field
from temporalio.contrib.workflow_streams import WorkflowStreamState

__all__ = [
    "MAX_BATCH_EVENTS",
    "MAX_DELTA_CHARS",
    "MAX_STREAMED_CHARS",
    "PUBLISH_SIGNAL",
    "STREAM_SUFFIX",
    "STREAM_TOPIC",
    "STREAM_WORKFLOW",
    "StreamBatch",
    "StreamEvent",
    "StreamInput",
    "stream_id",
]

STREAM_WORKFLOW: Final = "durable_tools.TokenStream"
"""Workflow type of the companion stream workflow."""
STREAM_SUFFIX: Final = "/stream"
"""A run's stream workflow id is the run id with this suffix."""
STREAM_TOPIC: Final = "tokens"
"""The one topic the stream workflow publishes to."""
PUBLISH_SIGNAL: Final = "durable_tools.stream.publish"
"""The signal the model activity publishes batches with (checked, deduplicated)."""

MAX_STREAMED_CHARS = 200_000
"""Text of one message streamed at most; the rest is left to the final message."""
MAX_DELTA_CHARS = 32_000
"""Largest text delta one event carries (a batch of 100 ms is far smaller)."""
MAX_BATCH_EVENTS = 64
"""Most events one publish batch may carry."""


def stream_id(run_id: str) -> str:
    """The workflow id of a run's token stream: `<run-id>/stream`."""
    return run_id + STREAM_SUFFIX


class StreamEvent(BaseModel):
    """One item of a run's live stream.

    `message_start` opens a model message (turn, attempt); `text` carries a delta of its
    text; `message_end` closes it; `elided` says the rest of a long message is not
    streamed. `AgentRun.stream()` adds `restarted` (a retried model call started over:
    forget the text so far), `tool_progress` (from the tools' heartbeats) and `run_ended`.
    """

    kind: Literal[
        "message_start",
        "text",
        "message_end",
        "elided",
        "restarted",
        "tool_progress",
        "run_ended",
    ]
    turn: int = Field(default=0, ge=0)
    """The model turn (1 for the run's first model call)."""
    attempt: int = Field(default=1, ge=1)
    """The model activity's attempt: above 1 after a retry (a worker restart, say)."""
    text: str = Field(default="", max_length=MAX_DELTA_CHARS)
    """A `text` delta; a progress line for `tool_progress`; the status for `run_ended`."""
    finish_reason: str | None = Field(default=None, max_length=200)
    call_id: str | None = Field(default=None, max_length=200)
    """For `tool_progress`: the tool call reporting."""
    tool: str | None = Field(default=None, max_length=200)
    run_id: str | None = Field(default=None, max_length=1_000)
    """For `tool_progress` of a sub-agent's call: the sub-agent run (None: the run's own)."""


class StreamBatch(BaseModel):
    """One publish: what the model activity flushed since its last one."""

    publisher: str = Field(min_length=1, max_length=300)
    """The activity attempt publishing (`<activity id>/<attempt>`), for deduplication."""
    seq: int = Field(ge=1)
    """1, 2, 3, ... per publisher: a batch delivered twice is kept once."""
    events: list[StreamEvent] = Field(max_length=MAX_BATCH_EVENTS)


class StreamInput(BaseModel):
    """Input of the stream workflow (and what it carries over continue-as-new)."""

    run_id: str
    stream_state: WorkflowStreamState | None = None
    publishers: dict[str, int] = Field(default_factory=dict)
    """Last sequence number kept per publisher."""
    message_offset: int = 0
    """Stream offset of the current message's `message_start` (late watchers start there)."""
    previous_offset: int = 0
    """Stream offset of the message before it: older items are dropped at continue-as-new."""
    offset: int = 0
    """The stream's next offset."""
    closed: bool = False
    continue_after_events: int = Field(default=2_000, ge=50, le=40_000)
    """History length after which the stream continues as new, carrying only the
    current message (the server's own suggestion comes much later)."""

    def carried(self, **changes: Any) -> StreamInput:
        """A copy with `changes` applied (for continue-as-new)."""
        return self.model_copy(update=changes)
