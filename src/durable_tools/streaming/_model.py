"""Calling a model adapter with live tokens: what the model activity runs when a run streams.

An adapter that can stream has `stream(request, on_text)`: it calls `on_text` with each
text delta as the provider sends it and returns the same `ModelResponse` its `complete`
would (tool calls and usage accumulated from the chunks). An adapter without it is
called as usual and its whole text is published at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from durable_tools.messages import ModelRequest, ModelResponse
from durable_tools.streaming._publisher import TokenPublisher

__all__ = ["StreamingModelAdapter", "complete_streaming"]


@runtime_checkable
class StreamingModelAdapter(Protocol):
    """A model adapter that can also stream its answer's text."""

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """One model call, answered whole."""
        ...

    async def stream(self, request: ModelRequest, on_text: Callable[[str], None]) -> ModelResponse:
        """One model call, its text passed to `on_text` as it is generated."""
        ...


class _Completes(Protocol):
    async def complete(self, request: ModelRequest) -> ModelResponse: ...


async def complete_streaming(adapter: _Completes, request: ModelRequest) -> ModelResponse:
    """Make the model call of the running model activity, publishing its text live.

    Must run inside the model activity (the publisher takes its client, queue and
    attempt from it). The returned response is the adapter's, untouched.
    """
    async with TokenPublisher.for_activity(request.run_id, request.turn + 1) as publisher:
        if isinstance(adapter, StreamingModelAdapter):
            response = await adapter.stream(request, publisher.text)
        else:
            response = await adapter.complete(request)
            publisher.text(response.message.content or "")
        publisher.finish_reason = response.finish_reason
        return response
