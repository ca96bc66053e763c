"""A real HTTP server on 127.0.0.1 that answers like Anthropic's Messages API.

The same server as `fake_openai` (canned answers or a responder, recorded requests, a
real socket), with Anthropic's shapes: `POST /v1/messages`, content blocks (`text`,
`tool_use` with an `input` object), `stop_reason`, usage with cache counts, and error
bodies `{"type": "error", "error": {"type": ..., "message": ...}}`.

    with FakeAnthropicServer([message(text("hi"))]) as server:
        model = AnthropicModel("claude-test", base_url=server.base_url, api_key="k")
"""

from __future__ import annotations

import json
from typing import Any

from fake_openai import CannedResponse, FakeOpenAIServer, RecordedRequest, sse_event

__all__ = [
    "CannedResponse",
    "FakeAnthropicServer",
    "RecordedRequest",
    "anthropic_error",
    "anthropic_status",
    "message",
    "message_stream",
    "text",
    "tool_use",
]


def text(value: str) -> dict[str, Any]:
    """A `text` content block."""
    return {"type": "text", "text": value}


def tool_use(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A `tool_use` content block: the arguments are an object, not JSON text."""
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def message(
    *content: dict[str, Any],
    stop_reason: str | None = None,
    input_tokens: int = 10,
    output_tokens: int = 5,
    cache_creation_input_tokens: int = 0,
    cache_read_input_tokens: int = 0,
    model: str = "claude-test",
) -> dict[str, Any]:
    """A successful Messages API response body."""
    has_calls = any(block.get("type") == "tool_use" for block in content)
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": list(content),
        "stop_reason": stop_reason or ("tool_use" if has_calls else "end_turn"),
        "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cache_creation_input_tokens": cache_creation_input_tokens,
            "cache_read_input_tokens": cache_read_input_tokens,
            "service_tier": "standard",
        },
    }


def anthropic_error(message_text: str, type_: str = "invalid_request_error") -> dict[str, Any]:
    """An error body in Anthropic's shape."""
    return {
        "type": "error",
        "error": {"type": type_, "message": message_text},
        "request_id": "req_fake",
    }


def anthropic_status(status: int, retry_after_ms: int | None = 10) -> CannedResponse:
    """Anthropic's answer of an HTTP error status, in its shape.

    529 is `overloaded_error`, 429 `rate_limit_error`, 503/500 `api_error`, 401
    `authentication_error`, 400 `invalid_request_error`. `retry_after_ms` sets the
    `retry-after-ms` header the SDK reads (short by default, so retries stay fast).
    """
    kinds = {
        400: ("invalid_request_error", "messages: text content blocks must be non-empty"),
        401: ("authentication_error", "invalid x-api-key"),
        429: ("rate_limit_error", "Number of requests has exceeded your rate limit."),
        529: ("overloaded_error", "Overloaded"),
    }
    type_, message_text = kinds.get(status, ("api_error", "Internal server error"))
    headers = {} if retry_after_ms is None else {"retry-after-ms": str(retry_after_ms)}
    return CannedResponse(status, anthropic_error(message_text, type_), headers=headers)


class FakeAnthropicServer(FakeOpenAIServer):
    """An Anthropic-compatible HTTP server on an ephemeral port of 127.0.0.1.

    `base_url` is the host root (use it as `ANTHROPIC_BASE_URL`): the SDK adds `/v1/...`.
    """

    base_path = ""

    def exhausted(self) -> CannedResponse:
        return CannedResponse(500, anthropic_error("fake: no canned response left", "api_error"))

    def context_error(self, limit: int, sent: int) -> CannedResponse:
        """Anthropic's answer to a prompt past the context window: an invalid request."""
        return CannedResponse(
            400, anthropic_error(f"prompt is too long: {sent} tokens > {limit} maximum")
        )


def message_stream(
    *content: dict[str, Any],
    splits: int = 3,
    stop_reason: str | None = None,
    input_tokens: int = 10,
    output_tokens: int = 5,
    cache_read_input_tokens: int = 0,
    model: str = "claude-test",
) -> list[Any]:
    """A Messages API answer as `stream: true` sends it.

    `message_start` (usage with the input tokens), a `ping`, then per content block
    `content_block_start`, its deltas (`text_delta`s; for `tool_use` the input JSON in
    `input_json_delta` fragments) and `content_block_stop`, then `message_delta` (stop
    reason, output tokens) and `message_stop`. Texts and inputs are cut into `splits`
    pieces. The final message is what `message(*content, ...)` returns.
    """
    whole = message(
        *content,
        stop_reason=stop_reason,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_read_input_tokens=cache_read_input_tokens,
        model=model,
    )
    out: list[Any] = []

    def emit(kind: str, **fields: Any) -> None:
        out.append(sse_event({"type": kind, **fields}, kind))

    def pieces(value: str) -> list[str]:
        size = max(1, -(-len(value) // splits))
        return [value[i : i + size] for i in range(0, len(value), size)] or [""]

    start_usage = {**whole["usage"], "output_tokens": 1}
    emit(
        "message_start",
        message={**whole, "content": [], "stop_reason": None, "usage": start_usage},
    )
    emit("ping")
    for index, block in enumerate(content):
        if block["type"] == "text":
            emit("content_block_start", index=index, content_block={"type": "text", "text": ""})
            for piece in pieces(block["text"]):
                emit(
                    "content_block_delta",
                    index=index,
                    delta={"type": "text_delta", "text": piece},
                )
        else:
            emit("content_block_start", index=index, content_block={**block, "input": {}})
            for piece in pieces(json.dumps(block["input"])):
                emit(
                    "content_block_delta",
                    index=index,
                    delta={"type": "input_json_delta", "partial_json": piece},
                )
        emit("content_block_stop", index=index)
    emit(
        "message_delta",
        delta={"stop_reason": whole["stop_reason"], "stop_sequence": None},
        usage={"output_tokens": output_tokens},
    )
    emit("message_stop")
    return out
