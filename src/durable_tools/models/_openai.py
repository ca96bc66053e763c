"""An adapter for the OpenAI Chat Completions API and the servers that speak it.

vLLM, Ollama, llama.cpp and most hosted providers accept the same `POST /chat/completions`
with tool calling, so one adapter pointed at `OPENAI_BASE_URL` covers them all. Requests go
through the official `openai` SDK (the `openai` extra) with its retries off
(`max_retries=0`): retries belong to Temporal, which records them in history and honours
the run's retry policy. The answer is read from the raw JSON rather than the SDK's typed
object, so that the small deviations of compatible servers (content parts, object
arguments, missing ids) are tolerated and a body that is not a completion fails clearly.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

from pydantic import SecretStr

from ..messages import Message, ModelRequest, ModelResponse, ToolCall, ToolDefinition, Usage
from ._errors import ModelError
from ._output import chat_response_format
from ._sdk import (
    SdkFailure,
    cached_client,
    display_url,
    excerpt,
    int_field,
    load_sdk,
    require_sdk,
    sdk_failure,
)
from ._settings import chat_fields
from ._stream_chunks import ChunkAccumulator

__all__ = [
    "DEFAULT_OPENAI_BASE_URL",
    "DEFAULT_OPENAI_TIMEOUT",
    "OpenAIChatModel",
    "OpenAIClientConfig",
    "message_to_openai",
    "tool_to_openai",
]

DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"
DEFAULT_OPENAI_TIMEOUT = 120.0

_log = logging.getLogger(__name__)


def _timeout_from_env() -> float:
    raw = os.environ.get("OPENAI_TIMEOUT")
    if raw is None or not raw.strip():
        return DEFAULT_OPENAI_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"OPENAI_TIMEOUT must be a number of seconds, got {raw!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"OPENAI_TIMEOUT must be a positive number of seconds, got {raw!r}")
    return value


def message_to_openai(message: Message) -> dict[str, Any]:
    """A message in the Chat Completions shape: only the fields that API knows."""
    if message.role == "assistant":
        out: dict[str, Any] = {"role": "assistant", "content": message.content}
        if message.tool_calls:
            out["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in message.tool_calls
            ]
        elif message.content is None:
            # Only an assistant message that calls tools may have null content.
            out["content"] = ""
        return out
    if message.role == "tool":
        # `name` (and the run's own `is_error`, `at`) are left out: the API ties a result to
        # its call by id, and some compatible servers reject fields they do not know.
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id or "",
            "content": message.content or "",
        }
    return {"role": message.role, "content": message.content or ""}


def tool_to_openai(tool: ToolDefinition) -> dict[str, Any]:
    """A tool definition in the Chat Completions shape."""
    function: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.parameters,
    }
    if tool.strict:
        # Sent only when set: servers without structured outputs reject the field.
        function["strict"] = True
    return {"type": "function", "function": function}


class OpenAIClientConfig:
    """Where and how to reach an OpenAI-compatible API; shared by both OpenAI adapters.

    Args:
        base_url: The API root; defaults to `OPENAI_BASE_URL`, else the OpenAI API.
        api_key: Sent as a Bearer token; defaults to `OPENAI_API_KEY`. Local servers
            (vLLM, Ollama, llama.cpp) usually need none, and then none is sent.
        timeout: Seconds for the whole request; defaults to `OPENAI_TIMEOUT`, else 120.
        http_client: An `httpx2.AsyncClient` for the SDK to use instead of the pooled
            one (custom TLS, proxies, tests).

    Raises:
        ValueError: When `OPENAI_TIMEOUT` is not a positive number or the `openai`
            package is not installed.
    """

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
        http_client: Any = None,
    ) -> None:
        require_sdk("openai", "openai")  # fail at resolution, naming the extra
        self.base_url = (
            base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_OPENAI_BASE_URL
        ).rstrip("/")
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        # A SecretStr prints as stars, so the key cannot leak through repr, vars or logs.
        self.api_key = SecretStr(key) if key else None
        self.timeout = timeout if timeout is not None else _timeout_from_env()
        self.http_client = http_client

    async def client(self) -> tuple[ModuleType, Any]:
        """The `openai` module and its `AsyncOpenAI` client, pooled per loop and settings."""
        openai = await load_sdk("openai", "openai.resources.chat", "openai.resources.responses")
        key = self.api_key.get_secret_value() if self.api_key else None

        def build() -> Any:
            return openai.AsyncOpenAI(
                base_url=self.base_url,
                # The SDK insists on a key; without one the header is omitted per request.
                api_key=key or "no-key",
                max_retries=0,
                timeout=self.timeout,
                http_client=self.http_client,
            )

        if self.http_client is not None:
            return openai, build()
        return openai, await cached_client(("openai", self.base_url, key, self.timeout), build)

    def extra_headers(self, openai: ModuleType) -> dict[str, Any]:
        """Per-request headers: no `Authorization` at all when there is no key."""
        if self.api_key is not None:
            return {}
        return {"Authorization": openai.Omit()}

    def error(self, openai: ModuleType, where: str, exc: Exception) -> ModelError:
        """Map what the SDK raised to a `ModelError`, redacting the key."""
        failure = sdk_failure(openai, exc, timeout=self.timeout, key_env="OPENAI_API_KEY")
        secret = self.api_key.get_secret_value() if self.api_key else None
        return failure.error(f"{where} at {display_url(self.base_url)}", secret)


class OpenAIChatModel:
    """A model adapter for an OpenAI-compatible Chat Completions endpoint.

    Each `complete` call sends exactly one HTTP request; a failure raises `ModelError`,
    retryable or not, and Temporal decides whether and when to try again.

    Args:
        model: The provider's model name, e.g. `gpt-4o-mini`.
        base_url: The API root; defaults to `OPENAI_BASE_URL`, else the OpenAI API.
        api_key: Sent as a Bearer token; defaults to `OPENAI_API_KEY`.
        timeout: Seconds for the whole request; defaults to `OPENAI_TIMEOUT`, else 120.
        http_client: An `httpx2.AsyncClient` to use instead of the pooled one.

    Raises:
        ValueError: When the model name is empty or `OPENAI_TIMEOUT` is not a number.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
        http_client: Any = None,
    ) -> None:
        if not model:
            raise ValueError("an OpenAI model name is required, e.g. `openai:gpt-4o-mini`")
        self.model = model
        self.config = OpenAIClientConfig(
            base_url=base_url, api_key=api_key, timeout=timeout, http_client=http_client
        )

    @property
    def base_url(self) -> str:
        """The API root requests go to."""
        return self.config.base_url

    @property
    def timeout(self) -> float:
        """Seconds allowed for one request."""
        return self.config.timeout

    def __repr__(self) -> str:
        has_key = "set" if self.config.api_key else "none"
        return f"OpenAIChatModel({self.model!r}, base_url={self.base_url!r}, api_key={has_key})"

    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body sent for a request (a hook for subclasses adding parameters)."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [message_to_openai(message) for message in request.messages],
        }
        if request.tools:
            body["tools"] = [tool_to_openai(tool) for tool in request.tools]
        body.update(chat_fields(request.settings, has_tools=bool(request.tools)))
        if request.output is not None:
            body["response_format"] = chat_response_format(request.output)
        return body

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Send one Chat Completions request and map the answer back.

        Raises:
            ModelError: Retryable for 408, 409, 429, 5xx, connection errors and timeouts
                (with `retry_after` from the response headers); non-retryable for auth
                errors, context-length errors, other statuses and answers that are not a
                chat completion.
        """
        where = f"openai:{self.model}"
        body = self.build_body(request)
        known = {key: body.pop(key) for key in ("model", "messages", "tools") if key in body}
        openai, client = await self.config.client()
        started = time.monotonic()
        try:
            raw = await client.chat.completions.with_raw_response.create(
                **known,
                extra_body=body or None,
                extra_headers=self.config.extra_headers(openai),
            )
        except Exception as exc:
            raise self.config.error(openai, where, exc) from None
        response = raw.http_response
        _log.debug(
            "openai %s: HTTP %s in %.3fs",
            self.model,
            response.status_code,
            time.monotonic() - started,
        )
        try:
            data = json.loads(response.content)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise self._malformed(
                f"response is not valid JSON (HTTP {response.status_code}): "
                f"{excerpt(response.text)}",
                response.status_code,
            ) from None
        try:
            return _parse_completion(data, turn=request.turn)
        except _Malformed as exc:
            raise self._malformed(
                f"response is not a chat completion: {exc}", response.status_code
            ) from None

    async def stream(self, request: ModelRequest, on_text: Callable[[str], None]) -> ModelResponse:
        """Like `complete`, with `stream=true`: each text delta goes to `on_text` as it comes.

        The chunks (tool calls split across them, usage in the last) are accumulated into
        the body a whole completion would have had and parsed by the same code, so the
        returned response is the one `complete` would return.

        Raises:
            ModelError: Classified as for `complete`.
        """
        where = f"openai:{self.model}"
        body = self.build_body(request)
        known = {key: body.pop(key) for key in ("model", "messages", "tools") if key in body}
        openai, client = await self.config.client()
        chunks = ChunkAccumulator()
        try:
            stream = await client.chat.completions.create(
                **known,
                stream=True,
                stream_options={"include_usage": True},
                extra_body=body or None,
                extra_headers=self.config.extra_headers(openai),
            )
            async for chunk in stream:
                delta = chunks.add(chunk.model_dump())
                if delta:
                    on_text(delta)
        except Exception as exc:
            raise self.config.error(openai, where, exc) from None
        try:
            return _parse_completion(chunks.completion(), turn=request.turn)
        except _Malformed as exc:
            raise self._malformed(f"streamed answer is not a chat completion: {exc}", 200) from None

    def _malformed(self, problem: str, status: int) -> ModelError:
        secret = self.config.api_key.get_secret_value() if self.config.api_key else None
        return SdkFailure(problem, retryable=False, status=status).error(
            f"openai:{self.model} at {display_url(self.base_url)}", secret
        )


class _Malformed(Exception):
    """The body is JSON but not a chat completion."""


def _text_of(content: Any) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        # Some servers answer with content parts; the text parts are the message.
        return "".join(
            part.get("text", "")
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    raise _Malformed(f"message content is a {type(content).__name__}")


def _parse_completion(data: Any, *, turn: int) -> ModelResponse:
    if not isinstance(data, dict):
        raise _Malformed(f"expected a JSON object, got {type(data).__name__}")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise _Malformed("no choices")
    choice = choices[0]
    if not isinstance(choice, dict) or not isinstance(choice.get("message"), dict):
        raise _Malformed("choice 0 has no message")
    message = choice["message"]
    content = _text_of(message.get("content"))
    if content is None and isinstance(message.get("refusal"), str):
        # A refusal is the model's answer; dropping it would look like an empty turn.
        content = message["refusal"]
    raw_calls = message.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise _Malformed("tool_calls is not a list")
    calls = []
    for index, raw in enumerate(raw_calls):
        function = raw.get("function") if isinstance(raw, dict) else None
        if not isinstance(function, dict):
            raise _Malformed(f"tool call {index} has no function")
        arguments = function.get("arguments")
        if arguments is None:
            arguments = "{}"
        elif not isinstance(arguments, str):
            # A few local servers send an object; the contract is the JSON text.
            arguments = json.dumps(arguments)
        call_id = raw.get("id")
        calls.append(
            ToolCall(
                # Some local servers omit ids; results must still be tied to their calls.
                id=call_id if isinstance(call_id, str) and call_id else f"call_{turn}_{index}",
                name=str(function.get("name") or ""),
                arguments=arguments,
            )
        )
    raw_usage = data.get("usage")
    usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
    raw_details = usage.get("prompt_tokens_details")
    details: dict[str, Any] = raw_details if isinstance(raw_details, dict) else {}
    raw_output = usage.get("completion_tokens_details")
    output: dict[str, Any] = raw_output if isinstance(raw_output, dict) else {}
    finish_reason = choice.get("finish_reason")
    return ModelResponse(
        message=Message(role="assistant", content=content, tool_calls=calls),
        finish_reason=finish_reason if isinstance(finish_reason, str) else None,
        usage=Usage(
            input_tokens=int_field(usage.get("prompt_tokens")),
            output_tokens=int_field(usage.get("completion_tokens")),
            cache_read_tokens=int_field(details.get("cached_tokens")),
            reasoning_tokens=int_field(output.get("reasoning_tokens")),
        ),
    )
