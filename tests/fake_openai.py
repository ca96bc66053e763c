"""A real HTTP server on 127.0.0.1 that answers like an OpenAI-compatible API.

Tests point an adapter (or a whole worker, through `OPENAI_BASE_URL`) at it, script its
answers, and read back the requests it got. It is a real socket rather than a mocked
transport so that timeouts, connection reuse and headers behave as in production.

    with FakeOpenAIServer([chat_completion(content="hi")]) as server:
        model = OpenAIChatModel("gpt-test", base_url=server.base_url)
        ...
        assert server.requests[0].json["model"] == "gpt-test"
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

__all__ = [
    "CannedResponse",
    "FakeOpenAIServer",
    "RecordedRequest",
    "chat_completion",
    "chat_stream",
    "context_length_error",
    "error_body",
    "openai_error",
    "responses_response",
    "responses_stream",
    "sent_tokens",
    "sse_event",
    "tool_call",
]


@dataclass
class CannedResponse:
    """One answer of the fake server."""

    status: int = 200
    body: Any = None
    """A dict or list is sent as JSON; str or bytes verbatim (to send broken JSON)."""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    """Seconds to wait before answering, to trigger client timeouts."""
    sse: list[Any] | None = None
    """Answer as a server-sent event stream instead of `body` (see `sse_event`): each
    item is sent as it comes, a `threading.Event` holds the stream open until it is set
    (at most 60 s), a float sleeps that many seconds."""


@dataclass
class RecordedRequest:
    """One request the fake server received."""

    method: str
    path: str
    headers: dict[str, str]
    """Header names lower-cased."""
    body: bytes
    client_port: int
    """The client's source port: equal ports mean a reused (kept-alive) connection."""
    received_at: float = 0.0
    """`time.monotonic()` when the request arrived (rate limit tests count these)."""

    @property
    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body)


def sent_tokens(request: RecordedRequest) -> int:
    """What a request costs the model, counted as providers roughly do: 4 bytes a token."""
    return len(request.body) // 4


Responder = Callable[[RecordedRequest], "CannedResponse | dict[str, Any]"]


def tool_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    """A tool call as the Chat Completions API returns it (`arguments` is raw text)."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def chat_completion(
    content: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    *,
    finish_reason: str | None = None,
    prompt_tokens: int = 10,
    completion_tokens: int = 5,
    model: str = "fake-model",
) -> dict[str, Any]:
    """A successful Chat Completions response body."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def responses_response(
    text: str | None = None,
    function_calls: list[tuple[str, str, str]] | None = None,
    *,
    input_tokens: int = 10,
    output_tokens: int = 5,
    cached_tokens: int = 0,
    model: str = "fake-model",
) -> dict[str, Any]:
    """A successful Responses API body: a reasoning item, then the message and calls.

    `function_calls` are `(call_id, name, arguments)`; each becomes its own output item.
    """
    output: list[dict[str, Any]] = [
        {"type": "reasoning", "id": "rs_fake", "summary": [], "encrypted_content": None}
    ]
    if text is not None:
        output.append(
            {
                "type": "message",
                "id": "msg_fake",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        )
    for index, (call_id, name, arguments) in enumerate(function_calls or []):
        output.append(
            {
                "type": "function_call",
                "id": f"fc_fake_{index}",
                "call_id": call_id,
                "name": name,
                "arguments": arguments,
                "status": "completed",
            }
        )
    return {
        "id": "resp_fake",
        "object": "response",
        "created_at": 0,
        "status": "completed",
        "error": None,
        "incomplete_details": None,
        "model": model,
        "output": output,
        "usage": {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": cached_tokens},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + output_tokens,
        },
    }


def context_length_error(limit: int, sent: int) -> CannedResponse:
    """OpenAI's answer to a request past the model's context window (HTTP 400)."""
    body = error_body(
        f"This model's maximum context length is {limit} tokens. However, your messages "
        f"resulted in {sent} tokens. Please reduce the length of the messages."
    )
    body["error"].update(param="messages", code="context_length_exceeded")
    return CannedResponse(400, body)


def error_body(message: str, type_: str = "invalid_request_error") -> dict[str, Any]:
    """An error body in OpenAI's shape."""
    return {"error": {"message": message, "type": type_, "param": None, "code": None}}


def openai_error(status: int, retry_after_ms: int | None = 10) -> CannedResponse:
    """OpenAI's answer of an HTTP error status, in its shape.

    429 is a rate limit, 503 an unavailable service, 401 a rejected key, 400 an invalid
    request, other 5xx a server error. `retry_after_ms` sets the `retry-after-ms` header
    the SDK reads (short by default, so tests that retry stay fast).
    """
    kinds = {
        400: ("invalid_request_error", "Invalid value for 'messages'."),
        401: ("invalid_request_error", "Incorrect API key provided: sk-***."),
        429: ("rate_limit_error", "Rate limit reached for requests."),
        503: ("server_error", "The engine is currently overloaded, please try again later."),
    }
    type_, message = kinds.get(status, ("server_error", "The server had an error."))
    headers = {} if retry_after_ms is None else {"retry-after-ms": str(retry_after_ms)}
    return CannedResponse(status, error_body(message, type_), headers=headers)


class FakeOpenAIServer:
    """An OpenAI-compatible HTTP server on an ephemeral port of 127.0.0.1.

    Args:
        responses: Canned answers, used in order (a dict is a 200 JSON body); or a
            callable that builds the answer from the recorded request. When the list
            runs out, the server answers 500 with a message saying so.
        context_limit: The model's context window in tokens (`sent_tokens`): a request
            past it gets the provider's "context too long" error instead of an answer.
    """

    def __init__(
        self,
        responses: Iterable[CannedResponse | dict[str, Any]] | Responder = (),
        *,
        context_limit: int | None = None,
    ) -> None:
        self.context_limit = context_limit
        self._responder: Responder | None = responses if callable(responses) else None
        self._queue: deque[CannedResponse | dict[str, Any]] = deque(
            () if callable(responses) else responses
        )
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    base_path = "/v1"
    """What `base_url` adds after the host: OpenAI's SDK wants the `/v1`, Anthropic's not."""

    @property
    def base_url(self) -> str:
        """The API root to use as `OPENAI_BASE_URL`."""
        if self._server is None:
            raise RuntimeError("the fake server is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}{self.base_path}"

    def exhausted(self) -> CannedResponse:
        """The answer once the canned ones ran out: a 500 in the provider's error shape."""
        return CannedResponse(
            500, error_body("fake server: no canned response left", "server_error")
        )

    def context_error(self, limit: int, sent: int) -> CannedResponse:
        """The answer to a request past `context_limit`, in the provider's shape."""
        return context_length_error(limit, sent)

    def add(self, *responses: CannedResponse | dict[str, Any]) -> None:
        """Queue more canned answers."""
        with self._lock:
            self._queue.extend(responses)

    def start(self) -> Self:
        """Bind a free port and serve in a background thread."""
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and free the port."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _answer(self, request: RecordedRequest) -> CannedResponse:
        with self._lock:
            self.requests.append(request)
            sent = sent_tokens(request)
            if self.context_limit is not None and sent > self.context_limit:
                return self.context_error(self.context_limit, sent)
            if self._responder is not None:
                answer: CannedResponse | dict[str, Any] = self._responder(request)
            elif self._queue:
                answer = self._queue.popleft()
            else:
                answer = self.exhausted()
        return answer if isinstance(answer, CannedResponse) else CannedResponse(body=answer)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            # HTTP/1.1 keeps connections alive, as real providers do, so client reuse
            # is exercised rather than a new connection per request.
            protocol_version = "HTTP/1.1"

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                recorded = RecordedRequest(
                    method=self.command,
                    path=self.path,
                    headers={name.lower(): value for name, value in self.headers.items()},
                    body=body,
                    client_port=self.client_address[1],
                    received_at=time.monotonic(),
                )
                answer = fake._answer(recorded)
                if answer.delay:
                    time.sleep(answer.delay)
                if answer.sse is not None:
                    self._stream(answer)
                    return
                if isinstance(answer.body, bytes):
                    payload = answer.body
                elif isinstance(answer.body, str):
                    payload = answer.body.encode()
                elif answer.body is None:
                    payload = b""
                else:
                    payload = json.dumps(answer.body).encode()
                headers = {"Content-Type": "application/json", **answer.headers}
                try:
                    self.send_response(answer.status)
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test): nothing to answer

            def _stream(self, answer: CannedResponse) -> None:
                try:
                    self.send_response(answer.status)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Cache-Control", "no-cache")
                    self.send_header("Transfer-Encoding", "chunked")
                    for name, value in answer.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    for item in answer.sse or []:
                        if isinstance(item, threading.Event):
                            item.wait(60)
                            continue
                        if isinstance(item, float):
                            time.sleep(item)
                            continue
                        data = item if isinstance(item, bytes) else str(item).encode()
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client went away mid-stream (a killed worker)

            do_GET = do_POST = _handle

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test output clean

        return Handler


# ------------------------------------------------------------------ streaming (SSE)


def sse_event(data: Any, event: str | None = None) -> str:
    """One server-sent event: an optional `event:` line, a `data:` line, a blank line."""
    text = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {text}\n\n"


def chat_stream(
    content: list[str] | None = None,
    tool_calls: list[tuple[str, str, list[str]]] | None = None,
    *,
    finish_reason: str | None = None,
    prompt_tokens: int = 10,
    completion_tokens: int = 5,
    include_usage: bool = True,
    model: str = "fake-model",
) -> list[Any]:
    """A Chat Completions answer as `stream=true` sends it: `chat.completion.chunk`s.

    The first chunk carries the role (and `content: ""` when there is text), then one
    chunk per text piece; each tool call `(id, name, argument_fragments)` starts with a
    chunk holding its `index`, `id` and `name` and goes on with one chunk per argument
    fragment; then the finish reason, then (with `stream_options.include_usage`) a chunk
    with `choices: []` and the usage, then `data: [DONE]`. Insert a `threading.Event`
    into the list to hold the stream open at that point.
    """

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        return sse_event(
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": model,
                "system_fingerprint": None,
                "choices": [
                    {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
                ],
            }
        )

    first: dict[str, Any] = {"role": "assistant", "content": "" if content else None}
    out: list[Any] = [chunk(first)]
    out += [chunk({"content": piece}) for piece in content or []]
    for index, (call_id, name, fragments) in enumerate(tool_calls or []):
        out.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": ""},
                        }
                    ]
                }
            )
        )
        out += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]})
            for fragment in fragments
        ]
    out.append(chunk({}, finish_reason or ("tool_calls" if tool_calls else "stop")))
    if include_usage:
        out.append(
            sse_event(
                {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion.chunk",
                    "created": 0,
                    "model": model,
                    "choices": [],
                    "usage": {
                        "prompt_tokens": prompt_tokens,
                        "completion_tokens": completion_tokens,
                        "total_tokens": prompt_tokens + completion_tokens,
                    },
                }
            )
        )
    out.append(sse_event("[DONE]"))
    return out


def responses_stream(
    text: list[str] | None = None,
    function_calls: list[tuple[str, str, list[str]]] | None = None,
    *,
    input_tokens: int = 10,
    output_tokens: int = 5,
    model: str = "fake-model",
) -> list[Any]:
    """A Responses API answer as `stream: true` sends it: typed events with sequence numbers.

    `response.created`, then per output item `response.output_item.added`, its deltas
    (`response.output_text.delta` per text piece, `response.function_call_arguments.delta`
    per argument fragment) and `.done` events, then `response.completed` with the whole
    response (the same body `responses_response` builds).
    """
    joined = "".join(text) if text is not None else None
    calls = [(cid, name, "".join(parts)) for cid, name, parts in function_calls or []]
    whole = responses_response(
        joined, calls, input_tokens=input_tokens, output_tokens=output_tokens, model=model
    )
    seq = iter(range(10_000))
    out: list[Any] = []

    def emit(kind: str, **fields: Any) -> None:
        out.append(sse_event({"type": kind, "sequence_number": next(seq), **fields}, kind))

    emit("response.created", response={**whole, "status": "in_progress", "output": []})
    for index, item in enumerate(whole["output"]):
        if item["type"] == "message":
            emit(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "content": []},
            )
            part = {"type": "output_text", "text": "", "annotations": []}
            emit(
                "response.content_part.added",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part=part,
            )
            for piece in text or []:
                emit(
                    "response.output_text.delta",
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    delta=piece,
                    logprobs=[],
                )
            emit(
                "response.output_text.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                text=joined,
                logprobs=[],
            )
            emit(
                "response.content_part.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part={**part, "text": joined},
            )
        elif item["type"] == "function_call":
            emit(
                "response.output_item.added",
                output_index=index,
                item={**item, "arguments": "", "status": "in_progress"},
            )
            fragments = next(
                parts for cid, _, parts in function_calls or [] if cid == item["call_id"]
            )
            for fragment in fragments:
                emit(
                    "response.function_call_arguments.delta",
                    item_id=item["id"],
                    output_index=index,
                    delta=fragment,
                )
            emit(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=index,
                arguments=item["arguments"],
            )
        else:
            emit("response.output_item.added", output_index=index, item=item)
        emit("response.output_item.done", output_index=index, item=item)
    emit("response.completed", response=whole)
    return out
