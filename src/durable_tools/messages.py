"""The conversation as data: messages, tool calls, and what model adapters take and return.

These types cross the wire between the agent workflow and the model activity, so they
are pydantic models with JSON-able fields only. Tool call arguments stay the raw
text the model produced: parsing is validation's job, and malformed JSON must reach it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Message",
    "ModelRequest",
    "ModelResponse",
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


class ModelRequest(BaseModel):
    """Input of one model call."""

    model: str
    """Adapter and model, e.g. `scripted:/path/steps.json` or `openai:gpt-4o-mini`."""
    messages: list[Message]
    tools: list[ToolDefinition] = Field(default_factory=list)
    turn: int = 0
    """0-based index of this model call within the run (scripted models answer by it)."""
    run_id: str = ""


class Usage(BaseModel):
    """Token counts, when the provider reports them."""

    input_tokens: int = 0
    """All input tokens of the call, cached ones included."""
    output_tokens: int = 0
    cache_read_tokens: int = 0
    """Of `input_tokens`, those read from the provider's prompt cache."""
    cache_write_tokens: int = 0
    """Of `input_tokens`, those written to the provider's prompt cache (Anthropic)."""


class ModelResponse(BaseModel):
    """Output of one model call: an assistant message, with or without tool calls."""

    message: Message
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
