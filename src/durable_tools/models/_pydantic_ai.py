"""A bridge to every provider Pydantic AI speaks: `pydantic-ai:<pydantic-ai model name>`.

`pydantic-ai:google-gla:gemini-2.5-pro`, `pydantic-ai:groq:llama-3.3-70b-versatile`,
`pydantic-ai:bedrock:...`, `pydantic-ai:anthropic:claude-sonnet-4-5`: the rest of the spec
is a Pydantic AI model name, resolved by its `infer_model` (its providers read their own
environment variables: `GOOGLE_API_KEY`, `GROQ_API_KEY`, ...). Only Pydantic AI's model
classes are used, one request per call through `pydantic_ai.direct.model_request`: the
agent loop stays ours, and so do retries (the SDK's are turned off with
`max_retries=0`; Temporal's retry policy is the only one).

Needs the `pydantic-ai` extra (`pydantic-ai-slim`) plus the provider's own extra of
`pydantic-ai-slim`, e.g. `pip install 'durable-tools[pydantic-ai]' 'pydantic-ai-slim[google]'`.
"""

from __future__ import annotations

import hashlib
import json
import os
from types import ModuleType
from typing import Any

from ..messages import (
    Message,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    NamedToolChoice,
    ToolCall,
    ToolDefinition,
    Usage,
)
from ._errors import ModelError
from ._sdk import RETRYABLE_STATUSES, cached_client, excerpt, int_field, load_sdk, require_sdk

__all__ = ["PydanticAIModel", "pydantic_ai_settings", "to_pydantic_ai_messages"]

_MODULES = (
    "pydantic_ai",
    "pydantic_ai.direct",
    "pydantic_ai.exceptions",
    "pydantic_ai.messages",
    "pydantic_ai.models",
    "pydantic_ai.output",
    "pydantic_ai.tools",
)

_SETTING_SUFFIXES = ("_API_KEY", "_BASE_URL", "_ENDPOINT", "_PROJECT", "_LOCATION", "_REGION")
_SECRET_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET", "_SECRET_ACCESS_KEY")


def _environment_key() -> str:
    """A digest of the provider settings in the environment: a model built before one of
    them changed (a new key, another base URL) is not reused."""
    found = sorted((k, v) for k, v in os.environ.items() if k.endswith(_SETTING_SUFFIXES))
    return hashlib.sha256(json.dumps(found).encode()).hexdigest()


def _redact(text: str) -> str:
    """The text without the values of credentials in the environment, which providers
    and proxies sometimes echo back in their errors."""
    for name, value in os.environ.items():
        if name.endswith(_SECRET_SUFFIXES) and len(value) >= 8:
            text = text.replace(value, "***")
    return text


def _object_arguments(arguments: str) -> dict[str, Any]:
    """A call's arguments as an object; {} for text that is not one (its tool result
    already carries the validation error the model needs)."""
    try:
        value = json.loads(arguments)
    except (json.JSONDecodeError, TypeError):
        return {}
    return value if isinstance(value, dict) else {}


def to_pydantic_ai_messages(pai: ModuleType, messages: list[Message]) -> list[Any]:
    """The conversation as Pydantic AI messages: system, user and tool entries become
    parts of `ModelRequest`s, each assistant message a `ModelResponse`."""
    m = pai.messages
    out: list[Any] = []
    parts: list[Any] = []
    for message in messages:
        if message.role == "assistant":
            if parts:
                out.append(m.ModelRequest(parts=parts))
                parts = []
            response_parts: list[Any] = []
            if message.content:
                response_parts.append(m.TextPart(content=message.content))
            response_parts.extend(
                m.ToolCallPart(
                    tool_name=call.name,
                    args=_object_arguments(call.arguments),
                    tool_call_id=call.id,
                )
                for call in message.tool_calls
            )
            out.append(m.ModelResponse(parts=response_parts))
        elif message.role == "system":
            if message.content:
                parts.append(m.SystemPromptPart(content=message.content))
        elif message.role == "user":
            parts.append(m.UserPromptPart(content=message.content or ""))
        else:
            parts.append(
                m.ToolReturnPart(
                    tool_name=message.name or "",
                    content=message.content or "",
                    tool_call_id=message.tool_call_id or "",
                    outcome="failed" if message.is_error else "success",
                )
            )
    if parts:
        out.append(m.ModelRequest(parts=parts))
    return out


def pydantic_ai_settings(settings: ModelSettings | None) -> dict[str, Any]:
    """Our settings in Pydantic AI's `ModelSettings` (a TypedDict), retries always off.

    Pydantic AI maps each to its provider, and leaves out what the provider lacks; `extra`
    goes as `extra_body`.
    """
    out: dict[str, Any] = {"max_retries": 0}
    if settings is None:
        return out
    if settings.temperature is not None:
        out["temperature"] = settings.temperature
    if settings.max_output_tokens is not None:
        out["max_tokens"] = settings.max_output_tokens
    if settings.tool_choice is not None:
        choice = settings.tool_choice
        out["tool_choice"] = [choice.name] if isinstance(choice, NamedToolChoice) else choice
    if settings.parallel_tool_calls is not None:
        out["parallel_tool_calls"] = settings.parallel_tool_calls
    if settings.stop:
        out["stop_sequences"] = list(settings.stop)
    if settings.seed is not None:
        out["seed"] = settings.seed
    if settings.reasoning_effort is not None:
        out["thinking"] = settings.reasoning_effort
    if settings.extra:
        out["extra_body"] = dict(settings.extra)
    return out


def _parameters(pai: ModuleType, request: ModelRequest) -> Any:
    tools = [_tool(pai, tool) for tool in request.tools]
    if request.output is None:
        return pai.models.ModelRequestParameters(function_tools=tools, allow_text_output=True)
    output = request.output
    return pai.models.ModelRequestParameters(
        function_tools=tools,
        output_mode="native",
        output_object=pai.output.OutputObjectDefinition(
            json_schema=output.json_schema,
            name=output.name,
            description=output.description,
            # None lets Pydantic AI choose per provider (Anthropic refuses a `False`).
            strict=output.strict or None,
        ),
        allow_text_output=False,
    )


def _tool(pai: ModuleType, tool: ToolDefinition) -> Any:
    return pai.tools.ToolDefinition(
        name=tool.name,
        parameters_json_schema=tool.parameters,
        description=tool.description or None,
        strict=tool.strict or None,
    )


def _from_response(pai: ModuleType, response: Any, *, turn: int) -> ModelResponse:
    m = pai.messages
    texts: list[str] = []
    calls: list[ToolCall] = []
    for index, part in enumerate(response.parts):
        if isinstance(part, m.TextPart):
            texts.append(part.content)
        elif isinstance(part, m.ToolCallPart):
            # The model's own text when it sent text, so malformed JSON reaches validation.
            args = part.args
            arguments = args if isinstance(args, str) else json.dumps(args or {})
            calls.append(
                ToolCall(
                    id=part.tool_call_id or f"call_{turn}_{index}",
                    name=part.tool_name,
                    arguments=arguments,
                )
            )
        # Thinking parts and the provider's own tools carry nothing this loop uses.
    usage = response.usage
    finish = response.finish_reason
    return ModelResponse(
        message=Message(role="assistant", content="".join(texts) or None, tool_calls=calls),
        finish_reason="tool_calls" if finish == "tool_call" else finish,
        usage=Usage(
            # Pydantic AI's input count includes cached tokens for every provider, as ours.
            input_tokens=int_field(usage.input_tokens),
            output_tokens=int_field(usage.output_tokens),
            cache_read_tokens=int_field(usage.cache_read_tokens),
            cache_write_tokens=int_field(usage.cache_write_tokens),
            reasoning_tokens=int_field(getattr(usage, "output_reasoning_tokens", 0)),
        ),
    )


def _said(exc: Exception) -> str:
    """The provider's own words about an error: the message in its error body if any."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return excerpt(error["message"])
        if isinstance(body.get("message"), str):
            return excerpt(body["message"])
    return excerpt(str(getattr(exc, "message", None) or exc))


def classify(pai: ModuleType, exc: Exception, where: str) -> ModelError:
    """Map what Pydantic AI raised to a `ModelError` (its error categories to ours).

    Authentication, quota, context-window and other rejected requests fail the run with
    a reason; rate limits, overload, 5xx, connection errors and timeouts are retried
    after the provider's delay; a configuration error (no API key, an unknown model or
    provider, a provider extra not installed) fails the run naming it.
    """
    e = pai.exceptions
    status = getattr(exc, "status_code", None)
    status = status if isinstance(status, int) else None
    retry_after = getattr(exc, "retry_after", None)
    said = _said(exc)
    shown = f" (HTTP {status})" if status is not None else ""
    retryable = context_exceeded = False
    if isinstance(exc, e.ModelAuthenticationError):
        problem = f"authentication failed{shown}; check the provider's API key: {said}"
    elif isinstance(exc, e.ModelContextWindowExceededError):
        problem = f"the conversation exceeds the model's context window{shown}: {said}"
        context_exceeded = True
    elif isinstance(exc, e.ModelQuotaExceededError):
        problem = f"the account's quota or credits are exhausted{shown}: {said}"
    elif isinstance(exc, e.ModelRateLimitError):
        problem, retryable = f"rate limited{shown}: {said}", True
    elif isinstance(exc, e.ModelUnavailableError):  # overloaded included
        problem, retryable = f"the provider is unavailable{shown}: {said}", True
    elif isinstance(exc, e.ModelServerError):
        problem, retryable = f"server error{shown}: {said}", True
    elif isinstance(exc, e.ModelConnectionError | e.ModelRequestTimeout):  # timeouts too
        problem, retryable = f"connection error ({type(exc).__name__}): {said}", True
    elif isinstance(exc, e.ModelRequestRejectedError):
        problem = f"the provider rejected the request{shown}: {said}"
    elif status is not None:
        problem = f"HTTP {status}: {said}"
        retryable = status in RETRYABLE_STATUSES or status >= 500
    elif isinstance(exc, e.UnexpectedModelBehavior):
        problem = f"unexpected answer: {said}"
    elif isinstance(exc, e.UserError):
        problem = f"configuration error: {said}"
    else:
        problem = f"request failed ({type(exc).__name__}): {said}"
    if not isinstance(retry_after, int | float) or not retryable:
        retry_after = None
    return ModelError(
        _redact(f"{where}: {problem}"),
        retryable=retryable,
        retry_after=max(float(retry_after), 0.0) if retry_after is not None else None,
        status=status,
        context_exceeded=context_exceeded,
    )


class _HeldModel:
    """A Pydantic AI model in the pooled-clients cache: entered on the loop that uses it
    (its provider then owns its HTTP client), closed at shutdown."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self._entered = False
        self._closed = False

    def is_closed(self) -> bool:
        return self._closed

    async def entered(self) -> Any:
        if not self._entered:
            self._entered = True  # before awaiting: a concurrent call must not enter twice
            await self.model.__aenter__()
        return self.model

    async def close(self) -> None:
        self._closed = True
        if self._entered:
            await self.model.__aexit__(None, None, None)


class PydanticAIModel:
    """A model adapter that sends each call through a Pydantic AI model class.

    Args:
        model: A Pydantic AI model name, `PROVIDER:MODEL`, e.g. `google-gla:gemini-2.5-pro`.

    Raises:
        ValueError: When the name is empty or `pydantic-ai-slim` is not installed.
    """

    def __init__(self, model: str) -> None:
        if not model or ":" not in model:
            raise ValueError(
                "a Pydantic AI model name is required after `pydantic-ai:`, "
                "e.g. `pydantic-ai:google-gla:gemini-2.5-pro`"
            )
        require_sdk("pydantic_ai", "pydantic-ai")  # fail at resolution, naming the extra
        self.model = model

    def __repr__(self) -> str:
        return f"PydanticAIModel({self.model!r})"

    async def _model(self, pai: ModuleType) -> Any:
        """The running loop's Pydantic AI model for this name, pooled like the SDK clients
        (built off the loop: it imports the provider's SDK) and closed with them by
        `aclose_shared_clients`."""
        key = ("pydantic-ai", self.model, _environment_key())
        held: _HeldModel = await cached_client(
            key, lambda: _HeldModel(pai.models.infer_model(self.model))
        )
        return await held.entered()

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Send one request through Pydantic AI and map the answer back.

        Raises:
            ModelError: Classified by `classify`.
        """
        where = f"pydantic-ai:{self.model}"
        pai = await load_sdk(*_MODULES)
        try:
            model = await self._model(pai)
            response = await pai.direct.model_request(
                model,
                to_pydantic_ai_messages(pai, request.messages),
                model_settings=pydantic_ai_settings(request.settings),
                model_request_parameters=_parameters(pai, request),
                instrument=False,
            )
        except Exception as exc:
            raise classify(pai, exc, where) from None
        return _from_response(pai, response, turn=request.turn)
