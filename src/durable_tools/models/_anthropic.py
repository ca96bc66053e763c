"""An adapter for Anthropic's Messages API, through the official `anthropic` SDK.

`anthropic:MODEL` sends one `POST /v1/messages` per call with the SDK's retries off
(`max_retries=0`): Temporal's retry policy is the only one. The conversation, kept in
the Chat Completions shape, is translated here: system messages become `system`, tool
calls `tool_use` blocks, and consecutive tool results one user message of `tool_result`
blocks, as the API requires after an assistant turn with parallel tool calls.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from types import ModuleType
from typing import Any

from pydantic import SecretStr

from ..messages import Message, ModelRequest, ModelResponse, ToolCall, ToolDefinition, Usage
from ._errors import ModelError
from ._output import anthropic_output_format
from ._sdk import (
    SdkFailure,
    cached_client,
    display_url,
    excerpt,
    int_field,
    load_sdk,
    provider_message,
    require_sdk,
    sdk_failure,
)
from ._settings import anthropic_fields

__all__ = [
    "DEFAULT_ANTHROPIC_BASE_URL",
    "DEFAULT_ANTHROPIC_MAX_TOKENS",
    "DEFAULT_ANTHROPIC_TIMEOUT",
    "AnthropicModel",
    "messages_to_anthropic",
]

DEFAULT_ANTHROPIC_BASE_URL = "https://api.anthropic.com"
DEFAULT_ANTHROPIC_TIMEOUT = 120.0
DEFAULT_ANTHROPIC_MAX_TOKENS = 4096


def _positive_from_env(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a positive number, got {raw!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive number, got {raw!r}")
    return value


def _flag_from_env(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def _tool_input(arguments: str) -> dict[str, Any]:
    """A `tool_use` block's `input` object from the call's raw JSON arguments.

    Calls this adapter produced round-trip exactly. A call whose arguments are not a JSON
    object (from another model earlier in the run) is sent with an empty input: its
    tool result already carries the validation error the model needs to see.
    """
    try:
        value = json.loads(arguments)
    except (json.JSONDecodeError, TypeError):
        return {}
    return value if isinstance(value, dict) else {}


def messages_to_anthropic(messages: list[Message]) -> tuple[str | None, list[dict[str, Any]]]:
    """The `system` text and the `messages` list of a Messages API request.

    Only fields the Messages API knows are sent. Consecutive entries of one role are
    merged into one message (the API alternates user and assistant), and in a user
    message the `tool_result` blocks come first, as the API requires.
    """
    system: list[str] = []
    out: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return  # an empty message is rejected; an empty entry says nothing anyway
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for message in messages:
        if message.role == "system":
            if message.content:
                system.append(message.content)
        elif message.role == "user":
            if message.content:
                add("user", [{"type": "text", "text": message.content}])
        elif message.role == "tool":
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id or "",
            }
            if message.content:
                block["content"] = message.content
            # Read defensively: the field is optional in the conversation's schema.
            if getattr(message, "is_error", None) is True:
                block["is_error"] = True
            add("user", [block])
        else:
            blocks: list[dict[str, Any]] = []
            if message.content:
                blocks.append({"type": "text", "text": message.content})
            blocks.extend(
                {
                    "type": "tool_use",
                    "id": call.id,
                    "name": call.name,
                    "input": _tool_input(call.arguments),
                }
                for call in message.tool_calls
            )
            add("assistant", blocks)
    for entry in out:
        if entry["role"] == "user":
            entry["content"].sort(key=lambda block: block["type"] != "tool_result")
    return ("\n\n".join(system) or None), out


def _tool_to_anthropic(tool: ToolDefinition) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "input_schema": tool.parameters,
    }
    if tool.strict:
        out["strict"] = True  # sent only when set, as for OpenAI
    return out


class _Malformed(Exception):
    """The body is JSON but not a Messages API message."""


def _parse_message(data: Any) -> ModelResponse:
    if not isinstance(data, dict) or not isinstance(data.get("content"), list):
        raise _Malformed("no content list")
    texts: list[str] = []
    calls: list[ToolCall] = []
    for index, block in enumerate(data["content"]):
        if not isinstance(block, dict):
            raise _Malformed(f"content block {index} is not an object")
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "tool_use":
            call_id, name = block.get("id"), block.get("name")
            if not isinstance(call_id, str) or not isinstance(name, str):
                raise _Malformed(f"tool_use block {index} has no id or name")
            calls.append(
                ToolCall(id=call_id, name=name, arguments=json.dumps(block.get("input", {})))
            )
        # Other blocks (thinking, server tool results) carry nothing this loop uses.
    raw_usage = data.get("usage")
    usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
    cache_read = int_field(usage.get("cache_read_input_tokens"))
    cache_write = int_field(usage.get("cache_creation_input_tokens"))
    stop_reason = data.get("stop_reason")
    return ModelResponse(
        message=Message(role="assistant", content="".join(texts) or None, tool_calls=calls),
        # Anthropic's own words: end_turn, tool_use, max_tokens, stop_sequence, refusal...
        finish_reason=stop_reason if isinstance(stop_reason, str) else None,
        usage=Usage(
            # Anthropic counts cached input apart; `input_tokens` here is the whole input.
            input_tokens=int_field(usage.get("input_tokens")) + cache_read + cache_write,
            output_tokens=int_field(usage.get("output_tokens")),
            cache_read_tokens=cache_read,
            cache_write_tokens=cache_write,
        ),
    )


class AnthropicModel:
    """A model adapter for Anthropic's Messages API.

    Args:
        model: The model name, e.g. `claude-sonnet-4-5`.
        base_url: The API root; defaults to `ANTHROPIC_BASE_URL`, else Anthropic's API.
        api_key: Defaults to `ANTHROPIC_API_KEY`.
        timeout: Seconds for the whole request; defaults to `ANTHROPIC_TIMEOUT`, else 120.
        max_tokens: The answer's token limit (the API requires one); defaults to
            `ANTHROPIC_MAX_TOKENS`, else 4096.
        prompt_cache: Ask the API to cache the prompt up to its last block, so the next
            turn of the loop reads it back cheaply; defaults to `ANTHROPIC_PROMPT_CACHE`.
        http_client: An `httpx2.AsyncClient` to use instead of the pooled one.

    Raises:
        ValueError: When the model name is empty, a setting is not a positive number, or
            the `anthropic` package is not installed.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
        max_tokens: int | None = None,
        prompt_cache: bool | None = None,
        http_client: Any = None,
    ) -> None:
        if not model:
            raise ValueError("an Anthropic model name is required, e.g. `anthropic:claude-...`")
        require_sdk("anthropic", "anthropic")  # fail at resolution, naming the extra
        self.model = model
        self.base_url = (
            base_url or os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_ANTHROPIC_BASE_URL
        ).rstrip("/")
        key = api_key if api_key is not None else os.environ.get("ANTHROPIC_API_KEY")
        self._api_key = SecretStr(key) if key else None
        self.timeout = (
            timeout
            if timeout is not None
            else _positive_from_env("ANTHROPIC_TIMEOUT", DEFAULT_ANTHROPIC_TIMEOUT)
        )
        self.max_tokens = (
            max_tokens
            if max_tokens is not None
            else int(_positive_from_env("ANTHROPIC_MAX_TOKENS", DEFAULT_ANTHROPIC_MAX_TOKENS))
        )
        self.prompt_cache = (
            prompt_cache if prompt_cache is not None else _flag_from_env("ANTHROPIC_PROMPT_CACHE")
        )
        self._http_client = http_client

    def __repr__(self) -> str:
        has_key = "set" if self._api_key else "none"
        return f"AnthropicModel({self.model!r}, base_url={self.base_url!r}, api_key={has_key})"

    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body sent for a request (a hook for subclasses adding parameters)."""
        system, messages = messages_to_anthropic(request.messages)
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": messages,
        }
        if system is not None:
            body["system"] = system
        if request.tools:
            body["tools"] = [_tool_to_anthropic(tool) for tool in request.tools]
        if self.prompt_cache:
            # Top-level: the API marks the last cacheable block, which moves with the loop.
            body["cache_control"] = {"type": "ephemeral"}
        body.update(anthropic_fields(request.settings, has_tools=bool(request.tools)))
        if request.output is not None:
            body["output_config"] = {
                **body.get("output_config", {}),
                "format": anthropic_output_format(request.output),
            }
        return body

    async def _client(self, anthropic: ModuleType, key: str) -> Any:
        def build() -> Any:
            return anthropic.AsyncAnthropic(
                base_url=self.base_url,
                api_key=key,
                max_retries=0,
                timeout=self.timeout,
                http_client=self._http_client,
            )

        if self._http_client is not None:
            return build()
        return await cached_client(("anthropic", self.base_url, key, self.timeout), build)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Send one Messages API request and map the answer back.

        Raises:
            ModelError: Retryable for 408, 409, 429, 529 (overloaded), other 5xx,
                connection errors and timeouts, waiting `retry-after` when the API says;
                non-retryable for a missing or rejected key, a conversation too long for
                the context window, other 4xx, and answers that are not a message.
        """
        where = f"anthropic:{self.model}"
        if self._api_key is None:
            raise ModelError(
                f"{where}: no API key: set ANTHROPIC_API_KEY on the worker", retryable=False
            )
        secret = self._api_key.get_secret_value()
        body = self.build_body(request)
        known = {
            key: body.pop(key)
            for key in ("model", "max_tokens", "messages", "system", "tools", "cache_control")
            if key in body
        }
        anthropic = await load_sdk("anthropic", "anthropic.resources.messages")
        client = await self._client(anthropic, secret)
        try:
            raw = await client.messages.with_raw_response.create(**known, extra_body=body or None)
        except Exception as exc:
            failure = sdk_failure(anthropic, exc, timeout=self.timeout, key_env="ANTHROPIC_API_KEY")
            raise failure.error(f"{where} at {display_url(self.base_url)}", secret) from None
        response = raw.http_response
        try:
            return _parse_message(json.loads(response.content))
        except (json.JSONDecodeError, UnicodeDecodeError):
            problem = f"response is not valid JSON: {excerpt(response.text)}"
        except _Malformed as exc:
            problem = f"response is not a message: {exc}"
        failure = SdkFailure(problem, retryable=False, status=response.status_code)
        raise failure.error(f"{where} at {display_url(self.base_url)}", secret)

    async def stream(self, request: ModelRequest, on_text: Callable[[str], None]) -> ModelResponse:
        """Like `complete`, streamed: each text delta goes to `on_text` as it comes.

        The SDK's `messages.stream` accumulates the events (`message_start`,
        `content_block_start`/`_delta`/`_stop` with tool inputs split into
        `input_json_delta` fragments, `message_delta` with the stop reason and usage)
        into the final message, which is parsed by the same code as a whole one.

        Raises:
            ModelError: Classified as for `complete`; an `error` event mid-stream
                (`overloaded_error`, `api_error`) is retryable.
        """
        where = f"anthropic:{self.model}"
        if self._api_key is None:
            raise ModelError(
                f"{where}: no API key: set ANTHROPIC_API_KEY on the worker", retryable=False
            )
        secret = self._api_key.get_secret_value()
        body = self.build_body(request)
        known = {
            key: body.pop(key)
            for key in ("model", "max_tokens", "messages", "system", "tools", "cache_control")
            if key in body
        }
        anthropic = await load_sdk("anthropic", "anthropic.resources.messages")
        client = await self._client(anthropic, secret)
        place = f"{where} at {display_url(self.base_url)}"
        try:
            async with client.messages.stream(**known, extra_body=body or None) as stream:
                async for delta in stream.text_stream:
                    if delta:
                        on_text(delta)
                final = await stream.get_final_message()
        except Exception as exc:
            if _mid_stream_error(anthropic, exc):
                said = provider_message(str(getattr(exc, "body", None) or exc))
                raise SdkFailure(f"the stream broke off: {said}", retryable=True).error(
                    place, secret
                ) from None
            failure = sdk_failure(anthropic, exc, timeout=self.timeout, key_env="ANTHROPIC_API_KEY")
            raise failure.error(place, secret) from None
        try:
            return _parse_message(final.model_dump())
        except _Malformed as exc:
            problem = f"the streamed answer is not a message: {exc}"
        raise SdkFailure(problem, retryable=False, status=200).error(place, secret)


def _mid_stream_error(anthropic: ModuleType, exc: Exception) -> bool:
    """An `error` event after the HTTP 200 (overloaded, api error): worth a retry."""
    return isinstance(exc, anthropic.APIStatusError) and exc.status_code < 400
