"""An adapter for OpenAI's Responses API (`openai-responses:MODEL`).

The same client settings as `openai:MODEL` (`OPENAI_BASE_URL`, `OPENAI_API_KEY`,
`OPENAI_TIMEOUT`, retries off), a different wire shape: the conversation is a list of
input items, a tool call is a `function_call` item and its result a
`function_call_output` item tied to it by `call_id`. The run keeps the whole conversation,
so every request is self-contained: no `previous_response_id`, nothing stored server-side
is relied on.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..messages import Message, ModelRequest, ModelResponse, ToolCall, ToolDefinition, Usage
from ._openai import OpenAIClientConfig
from ._output import responses_text_format
from ._sdk import SdkFailure, display_url, excerpt, int_field
from ._settings import responses_fields

__all__ = ["OpenAIResponsesModel", "messages_to_responses_input"]


def messages_to_responses_input(messages: list[Message]) -> list[dict[str, Any]]:
    """The `input` items of a Responses request: only fields that API knows."""
    items: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.tool_call_id or "",
                    "output": message.content or "",
                }
            )
        elif message.role == "assistant":
            if message.content:
                items.append({"role": "assistant", "content": message.content})
            items.extend(
                {
                    "type": "function_call",
                    "call_id": call.id,
                    "name": call.name,
                    "arguments": call.arguments,
                }
                for call in message.tool_calls
            )
        else:
            items.append({"role": message.role, "content": message.content or ""})
    return items


def _tool_to_responses(tool: ToolDefinition) -> dict[str, Any]:
    # `strict` is sent either way: the Responses API defaults it to true, and a schema
    # not written for strict mode would be rejected.
    return {
        "type": "function",
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.parameters,
        "strict": tool.strict,
    }


class _Malformed(Exception):
    """The body is JSON but not a response."""


def _parse_response(data: Any, *, turn: int) -> ModelResponse:
    if not isinstance(data, dict) or not isinstance(data.get("output"), list):
        raise _Malformed("no output list")
    texts: list[str] = []
    calls: list[ToolCall] = []
    for index, item in enumerate(data["output"]):
        if not isinstance(item, dict):
            raise _Malformed(f"output item {index} is not an object")
        kind = item.get("type")
        if kind == "message" and isinstance(item.get("content"), list):
            for part in item["content"]:
                if not isinstance(part, dict):
                    continue
                if part.get("type") == "output_text" and isinstance(part.get("text"), str):
                    texts.append(part["text"])
                elif part.get("type") == "refusal" and isinstance(part.get("refusal"), str):
                    texts.append(part["refusal"])
        elif kind == "function_call":
            call_id = item.get("call_id")
            arguments = item.get("arguments")
            calls.append(
                ToolCall(
                    id=call_id if isinstance(call_id, str) and call_id else f"call_{turn}_{index}",
                    name=str(item.get("name") or ""),
                    arguments=arguments if isinstance(arguments, str) else "{}",
                )
            )
        # Reasoning items are not sent back: every request carries the conversation only.
    raw_usage = data.get("usage")
    usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
    raw_details = usage.get("input_tokens_details")
    details: dict[str, Any] = raw_details if isinstance(raw_details, dict) else {}
    raw_output = usage.get("output_tokens_details")
    output: dict[str, Any] = raw_output if isinstance(raw_output, dict) else {}
    status = data.get("status")
    incomplete = data.get("incomplete_details")
    if calls:
        finish_reason: str | None = "tool_calls"
    elif status == "incomplete" and isinstance(incomplete, dict):
        finish_reason = str(incomplete.get("reason") or "incomplete")
    else:
        finish_reason = "stop" if status in (None, "completed") else str(status)
    return ModelResponse(
        message=Message(role="assistant", content="".join(texts) or None, tool_calls=calls),
        finish_reason=finish_reason,
        usage=Usage(
            input_tokens=int_field(usage.get("input_tokens")),
            output_tokens=int_field(usage.get("output_tokens")),
            cache_read_tokens=int_field(details.get("cached_tokens")),
            reasoning_tokens=int_field(output.get("reasoning_tokens")),
        ),
    )


class OpenAIResponsesModel:
    """A model adapter for the OpenAI Responses API.

    Args:
        model: The model name, e.g. `gpt-5-mini`.
        base_url: As for `OpenAIChatModel`.
        api_key: As for `OpenAIChatModel`.
        timeout: As for `OpenAIChatModel`.
        http_client: As for `OpenAIChatModel`.

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
            raise ValueError("a model name is required, e.g. `openai-responses:gpt-5-mini`")
        self.model = model
        self.config = OpenAIClientConfig(
            base_url=base_url, api_key=api_key, timeout=timeout, http_client=http_client
        )

    def __repr__(self) -> str:
        has_key = "set" if self.config.api_key else "none"
        return (
            f"OpenAIResponsesModel({self.model!r}, base_url={self.config.base_url!r}, "
            f"api_key={has_key})"
        )

    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body sent for a request (a hook for subclasses adding parameters)."""
        body: dict[str, Any] = {
            "model": self.model,
            "input": messages_to_responses_input(request.messages),
        }
        if request.tools:
            body["tools"] = [_tool_to_responses(tool) for tool in request.tools]
        body.update(responses_fields(request.settings, has_tools=bool(request.tools)))
        if request.output is not None:
            body["text"] = {**body.get("text", {}), "format": responses_text_format(request.output)}
        return body

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Send one `POST /responses` and map the answer back.

        Raises:
            ModelError: Classified as for `OpenAIChatModel`.
        """
        where = f"openai-responses:{self.model}"
        body = self.build_body(request)
        known = {key: body.pop(key) for key in ("model", "input", "tools") if key in body}
        openai, client = await self.config.client()
        try:
            raw = await client.responses.with_raw_response.create(
                **known, extra_body=body or None, extra_headers=self.config.extra_headers(openai)
            )
        except Exception as exc:
            raise self.config.error(openai, where, exc) from None
        response = raw.http_response
        try:
            return _parse_response(json.loads(response.content), turn=request.turn)
        except (json.JSONDecodeError, UnicodeDecodeError):
            problem = f"response is not valid JSON: {excerpt(response.text)}"
        except _Malformed as exc:
            problem = f"response is not a Responses API response: {exc}"
        secret = self.config.api_key.get_secret_value() if self.config.api_key else None
        failure = SdkFailure(problem, retryable=False, status=response.status_code)
        raise failure.error(f"{where} at {display_url(self.config.base_url)}", secret)

    async def stream(self, request: ModelRequest, on_text: Callable[[str], None]) -> ModelResponse:
        """Like `complete`, with `stream: true`: text deltas go to `on_text` as they come.

        The stream's last event (`response.completed`, or `response.incomplete`) carries
        the whole response, which is parsed by the same code as a non-streamed one.

        Raises:
            ModelError: Classified as for `complete`; a `response.failed` event fails the
                call without retrying, naming the provider's error.
        """
        where = f"openai-responses:{self.model}"
        body = self.build_body(request)
        known = {key: body.pop(key) for key in ("model", "input", "tools") if key in body}
        openai, client = await self.config.client()
        final: Any = None
        try:
            stream = await client.responses.create(
                **known,
                stream=True,
                extra_body=body or None,
                extra_headers=self.config.extra_headers(openai),
            )
            async for event in stream:
                kind = getattr(event, "type", None)
                if kind in ("response.output_text.delta", "response.refusal.delta"):
                    delta = getattr(event, "delta", None)
                    if isinstance(delta, str) and delta:
                        on_text(delta)
                elif kind in ("response.completed", "response.incomplete", "response.failed"):
                    final = event.response.model_dump()
        except Exception as exc:
            raise self.config.error(openai, where, exc) from None
        secret = self.config.api_key.get_secret_value() if self.config.api_key else None
        place = f"{where} at {display_url(self.config.base_url)}"
        if isinstance(final, dict) and final.get("status") == "failed":
            error = final.get("error")
            said = error.get("message") if isinstance(error, dict) else error
            failure = SdkFailure(f"the response failed: {excerpt(str(said))}", retryable=False)
            raise failure.error(place, secret)
        try:
            return _parse_response(final, turn=request.turn)
        except _Malformed as exc:
            problem = f"the stream did not end with a response: {exc}"
        raise SdkFailure(problem, retryable=False, status=200).error(place, secret)
