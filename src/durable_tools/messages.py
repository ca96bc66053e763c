"""The conversation as data: messages, tool calls, and what model adapters take and return.

These types cross the wire between the agent workflow and the model activity, so they
are pydantic models with JSON-able fields only. Tool call arguments stay the raw
text the model produced: parsing is validation's job, and malformed JSON must reach it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "Message",
    "ModelRequest",
    "ModelResponse",
    "ModelSettings",
    "NamedToolChoice",
    "ToolCall",
    "ToolDefinition",
    "Usage",
]


class ToolCall(BaseModel):
    """One call the model asked for."""

    model_config = ConfigDict(extra="forbid")

    id: str
    """The model's call id; every result or error about the call carries it back."""
    name: str
    """The tool name as the model wrote it."""
    arguments: str = "{}"
    """The arguments exactly as the model wrote them: JSON text, possibly malformed."""


Role = Literal["system", "user", "assistant", "tool"]


class Message(BaseModel):
    """One entry of the conversation, in the shape of OpenAI's Chat Completions API."""

    model_config = ConfigDict(extra="forbid")

    role: Role
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """Set on assistant messages that call tools."""
    tool_call_id: str | None = None
    """Set on tool messages: the call this result answers."""
    name: str | None = None
    """On tool messages, the tool's name."""
    is_error: bool | None = None
    """On tool messages: True when the call failed, was refused, skipped or invalid. Kept
    for the run's own records; model adapters do not send it to providers."""
    at: datetime | None = None
    """On tool messages: when the result was made (workflow time). Not sent to providers."""

    @classmethod
    def system(cls, content: str) -> Message:
        return cls(role="system", content=content)

    @classmethod
    def user(cls, content: str) -> Message:
        return cls(role="user", content=content)

    @classmethod
    def tool(
        cls,
        call_id: str,
        name: str,
        content: str,
        *,
        is_error: bool | None = None,
        at: datetime | None = None,
    ) -> Message:
        return cls(
            role="tool",
            tool_call_id=call_id,
            name=name,
            content=content,
            is_error=is_error,
            at=at,
        )


class ToolDefinition(BaseModel):
    """What a model is told about one tool."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    strict: bool = False


class NamedToolChoice(BaseModel):
    """Force the model to call this one tool."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, max_length=200)


_OWNED_FIELDS = frozenset({"model", "messages", "input", "system", "tools", "stream"})
"""Request fields an adapter builds from the conversation; `extra` may not replace them
(a `stream` would also change the answer's shape)."""


class ModelSettings(BaseModel):
    """How the model should answer: sampling, length, tool choice, reasoning.

    Every field left unset is not sent, so the provider's own default applies. Each
    adapter maps the fields to its provider's names (see docs/models.md); `extra` is
    merged into the request body as it is, for provider-specific parameters.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    max_output_tokens: int | None = Field(default=None, ge=1)
    """Most tokens one answer may have (reasoning tokens included where the provider
    counts them there)."""
    tool_choice: Literal["auto", "required", "none"] | NamedToolChoice | None = None
    """`auto` (the model decides), `required` (some tool), `none` (no tool), or
    `{"name": ...}` (that tool)."""
    parallel_tool_calls: bool | None = None
    """False asks for at most one tool call per answer."""
    stop: tuple[str, ...] = Field(default=(), max_length=16)
    """Sequences that end the answer."""
    seed: int | None = None
    """For providers that sample reproducibly with one (OpenAI); others ignore it."""
    reasoning_effort: Literal["low", "medium", "high"] | None = None
    extra: dict[str, Any] = Field(default_factory=dict)
    """Provider-specific parameters merged into the request body, e.g. `{"top_p": 0.9}`."""

    @field_validator("extra")
    @classmethod
    def _not_owned(cls, extra: dict[str, Any]) -> dict[str, Any]:
        owned = sorted(_OWNED_FIELDS.intersection(extra))
        if owned:
            raise ValueError(
                f"extra may not set {', '.join(owned)}: the adapter sends those itself"
            )
        return extra

    def merged(self, override: ModelSettings | None) -> ModelSettings:
        """These settings with the fields `override` sets replacing them (`extra` merged
        key by key)."""
        if override is None:
            return self
        update = {name: getattr(override, name) for name in override.model_fields_set}
        update["extra"] = {**self.extra, **override.extra}
        return self.model_copy(update=update)


class ModelRequest(BaseModel):
    """Input of one model call."""

    model: str
    """Adapter and model, e.g. `scripted:/path/steps.json` or `openai:gpt-4o-mini`."""
    messages: list[Message]
    tools: list[ToolDefinition] = Field(default_factory=list)
    turn: int = 0
    """0-based index of this model call within the run (scripted models answer by it)."""
    run_id: str = ""
    settings: ModelSettings | None = None
    """Sampling and tool-choice settings; None sends none (the provider's defaults)."""


class Usage(BaseModel):
    """Token counts, when the provider reports them."""

    input_tokens: int = 0
    """All input tokens of the call, cached ones included."""
    output_tokens: int = 0
    cache_read_tokens: int = 0
    """Of `input_tokens`, those read from the provider's prompt cache."""
    cache_write_tokens: int = 0
    """Of `input_tokens`, those written to the provider's prompt cache (Anthropic)."""
    reasoning_tokens: int = 0
    """Of `output_tokens`, those spent reasoning (OpenAI reports them)."""

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
        )

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens


class ModelResponse(BaseModel):
    """Output of one model call: an assistant message, with or without tool calls."""

    message: Message
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
