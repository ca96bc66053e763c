"""Live tokens: a run's model text and tool progress as they happen, history unchanged.

With `AgentConfig(stream_tokens=True)` the model activity streams the provider's answer
and publishes its text, in batches of ~100 ms, to a companion workflow `<run-id>/stream`
built on `temporalio.contrib.workflow_streams`; the run's own history keeps only the
final message. `AgentRun.stream()` and `durable-tools watch RUN` follow it. See
docs/streaming.md.
"""

from ._model import StreamingModelAdapter, complete_streaming
from ._publisher import BATCH_SECONDS, TokenPublisher
from ._types import MAX_STREAMED_CHARS, STREAM_SUFFIX, STREAM_WORKFLOW, StreamEvent, stream_id

__all__ = [
    "BATCH_SECONDS",
    "MAX_STREAMED_CHARS",
    "STREAM_SUFFIX",
    "STREAM_WORKFLOW",
    "StreamEvent",
    "StreamingModelAdapter",
    "TokenPublisher",
    "complete_streaming",
    "stream_id",
]
