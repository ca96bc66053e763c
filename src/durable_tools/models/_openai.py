"""An adapter for the OpenAI Chat Completions API and the servers that speak it.

vLLM, Ollama, llama.cpp and most hosted providers accept the same `POST /chat/completions`
with tool calling, so one adapter pointed at `OPENAI_BASE_URL` covers them all. It speaks
HTTP through httpx rather than the OpenAI SDK: the SDK retries on its own, and retries here
belong to Temporal, which records them in history and honours the run's retry policy.
"""

from __future__ import annotations

import email.utils
import json
import logging
import math
import os
import time
from typing import Any

import httpx
from pydantic import SecretStr

from .._http_clients import aclose_shared_clients
from .._http_clients import shared_client as _shared_client
from ..messages import Message, ModelRequest, ModelResponse, ToolCall, ToolDefinition, Usage
from ._errors import ModelError

__all__ = [
    "DEFAULT_OPENAI_BASE_URL",
    "DEFAULT_OPENAI_TIMEOUT",
    "OpenAIChatModel",
    "aclose_shared_clients",
    "parse_retry_after",
]

DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"
DEFAULT_OPENAI_TIMEOUT = 120.0

# The statuses the OpenAI SDK itself retries: request timeout, lock conflict, rate limit,
# and server errors. Every other 4xx fails the same way on every attempt.
_RETRYABLE_STATUSES = frozenset({408, 409, 429})

# Provider error bodies can be whole HTML pages from a proxy; operators need the gist.
_MAX_PROVIDER_MESSAGE = 1000

_log = logging.getLogger(__name__)


def parse_retry_after(headers: httpx.Headers, *, now: float | None = None) -> float | None:
    """Seconds a provider asked us to wait, from `retry-after-ms` or `Retry-After`.

    Args:
        headers: The response headers.
        now: The current time (seconds since the epoch), for HTTP-date values.

    Returns:
        A non-negative number of seconds, or None when no usable header is present.
    """
    # OpenAI sends the millisecond form too; it is the more precise of the two.
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            value = float(millis) / 1000
        except ValueError:
            pass
        else:
            if math.isfinite(value):
                return max(value, 0.0)
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        pass
    else:
        return max(seconds, 0.0) if math.isfinite(seconds) else None
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # RFC 9110 dates are GMT; a naive one is a sloppy server's
        return None
    current = time.time() if now is None else now
    return max(when.timestamp() - current, 0.0)


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


def _message_to_openai(message: Message) -> dict[str, Any]:
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


def _tool_to_openai(tool: ToolDefinition) -> dict[str, Any]:
    function: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.parameters,
    }
    if tool.strict:
        # Sent only when set: servers without structured outputs reject the field.
        function["strict"] = True
    return {"type": "function", "function": function}


class OpenAIChatModel:
    """A model adapter for an OpenAI-compatible Chat Completions endpoint.

    Each `complete` call sends exactly one HTTP request; a failure raises `ModelError`,
    retryable or not, and Temporal decides whether and when to try again.

    Args:
        model: The provider's model name, e.g. `gpt-4o-mini`.
        base_url: The API root; defaults to `OPENAI_BASE_URL`, else the OpenAI API.
        api_key: Sent as a Bearer token; defaults to `OPENAI_API_KEY`. Local servers
            (vLLM, Ollama, llama.cpp) usually need none.
        timeout: Seconds for the whole request; defaults to `OPENAI_TIMEOUT`, else 120.
        client: An httpx client to use instead of the shared one (tests, custom TLS).

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
        client: httpx.AsyncClient | None = None,
    ) -> None:
        if not model:
            raise ValueError("an OpenAI model name is required, e.g. `openai:gpt-4o-mini`")
        self.model = model
        self.base_url = (
            base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_OPENAI_BASE_URL
        ).rstrip("/")
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        # A SecretStr prints as stars, so the key cannot leak through repr, vars or logs.
        self._api_key = SecretStr(key) if key else None
        self.timeout = timeout if timeout is not None else _timeout_from_env()
        self._client = client

    def __repr__(self) -> str:
        has_key = "set" if self._api_key else "none"
        return f"OpenAIChatModel({self.model!r}, base_url={self.base_url!r}, api_key={has_key})"

    @property
    def url(self) -> str:
        """The Chat Completions endpoint."""
        return f"{self.base_url}/chat/completions"

    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body sent for a request (a hook for subclasses adding parameters)."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [_message_to_openai(message) for message in request.messages],
        }
        if request.tools:
            body["tools"] = [_tool_to_openai(tool) for tool in request.tools]
        return body

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Send one Chat Completions request and map the answer back.

        Raises:
            ModelError: Retryable for 408, 409, 429, 5xx, connection errors and timeouts
                (with `retry_after` from the response headers); non-retryable for other
                statuses and for answers that are not a chat completion.
        """
        headers = {"Accept": "application/json"}
        if self._api_key is not None:
            headers["Authorization"] = f"Bearer {self._api_key.get_secret_value()}"
        client = self._client or _shared_client(self.base_url)
        started = time.monotonic()
        try:
            response = await client.post(
                self.url, json=self.build_body(request), headers=headers, timeout=self.timeout
            )
        except httpx.TimeoutException:
            raise self._error(f"timed out after {self.timeout:g}s", retryable=True) from None
        except httpx.UnsupportedProtocol as exc:
            # A base URL without http(s):// is a configuration error, not a blip.
            raise self._error(f"bad base URL: {exc}", retryable=False) from None
        except httpx.TransportError as exc:
            raise self._error(
                f"connection error ({type(exc).__name__}): {exc}", retryable=True
            ) from None
        except httpx.HTTPError as exc:
            raise self._error(
                f"request failed ({type(exc).__name__}): {exc}", retryable=False
            ) from None
        _log.debug(
            "openai %s: HTTP %s in %.3fs",
            self.model,
            response.status_code,
            time.monotonic() - started,
        )
        if not response.is_success:
            status = response.status_code
            retryable = status in _RETRYABLE_STATUSES or status >= 500
            raise self._error(
                f"HTTP {status}: {_provider_message(response)}",
                retryable=retryable,
                retry_after=parse_retry_after(response.headers) if retryable else None,
                status=status,
            )
        try:
            data = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise self._error(
                f"response is not valid JSON (HTTP {response.status_code}): "
                f"{_excerpt(response.text)}",
                retryable=False,
                status=response.status_code,
            ) from None
        try:
            return _parse_completion(data, turn=request.turn)
        except _Malformed as exc:
            raise self._error(
                f"response is not a chat completion: {exc}",
                retryable=False,
                status=response.status_code,
            ) from None

    def _error(
        self,
        problem: str,
        *,
        retryable: bool,
        retry_after: float | None = None,
        status: int | None = None,
    ) -> ModelError:
        message = f"openai:{self.model} at {_display_url(self.base_url)}: {problem}"
        if self._api_key is not None:
            # Providers and proxies sometimes echo the credential back in their errors.
            message = message.replace(self._api_key.get_secret_value(), "***")
        return ModelError(message, retryable=retryable, retry_after=retry_after, status=status)


def _display_url(url: str) -> str:
    """The URL without userinfo: `user:password@` in a base URL is a credential too."""
    try:
        return str(httpx.URL(url).copy_with(username=None, password=None))
    except (httpx.InvalidURL, TypeError, ValueError):
        scheme, sep, rest = url.rpartition("://")
        return f"{scheme}{sep}{rest.rpartition('@')[2]}"


class _Malformed(Exception):
    """The body is JSON but not a chat completion."""


def _excerpt(text: str) -> str:
    text = text.strip()
    if len(text) > _MAX_PROVIDER_MESSAGE:
        return text[:_MAX_PROVIDER_MESSAGE] + "..."
    return text or "(empty body)"


def _provider_message(response: httpx.Response) -> str:
    """The provider's own words about an error, in the shapes compatible servers use."""
    try:
        data = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return _excerpt(response.text)
    if isinstance(data, dict):
        error = data.get("error")
        # OpenAI: {"error": {"message", "type", "code"}}; others: {"error": "..."},
        # {"message": "..."} (vLLM), {"detail": "..."} (FastAPI-based servers).
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return _excerpt(error["message"])
        for candidate in (error, data.get("message"), data.get("detail")):
            if isinstance(candidate, str) and candidate:
                return _excerpt(candidate)
    return _excerpt(response.text)


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
    finish_reason = choice.get("finish_reason")
    return ModelResponse(
        message=Message(role="assistant", content=content, tool_calls=calls),
        finish_reason=finish_reason if isinstance(finish_reason, str) else None,
        usage=Usage(
            input_tokens=_count(usage.get("prompt_tokens")),
            output_tokens=_count(usage.get("completion_tokens")),
        ),
    )


def _count(value: Any) -> int:
    return value if isinstance(value, int) and value >= 0 else 0
