"""Context compaction as data: its configuration, the model's view of a compacted
conversation, and the token estimate both sides of the wire share.

The whole conversation stays in the artifact store (the snapshot chain); what compaction
changes is what the model is *sent*: the leading system messages, one message holding a
summary of the messages `[head, until)`, then every message from `until` on. The summary
is a model call's answer (the `durable_tools.compact` activity); the view is workflow
state, carried over continue-as-new, and sent with every model call after it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field

from durable_tools._wire import WireModel
from durable_tools.messages import Message, ToolDefinition

__all__ = [
    "CHARS_PER_TOKEN",
    "MAX_SUMMARY_CHARS",
    "CompactionConfig",
    "ContextView",
    "estimate_message_tokens",
    "estimate_tool_tokens",
]

CHARS_PER_TOKEN = 4
"""The estimate's characters per token (English text and JSON average about 4 with the
providers' tokenizers); used only where the provider reported no usage."""

MAX_SUMMARY_CHARS = 24_000
"""Longest summary kept (about 6,000 tokens); a longer answer of the summariser is cut.
The summary is sent with every later model call and carried over continue-as-new."""

_MESSAGE_OVERHEAD_TOKENS = 4
"""Tokens a provider adds per message (role, separators), as OpenAI documents it."""


class CompactionConfig(BaseModel):
    """When and how a run compacts its model's context (see docs/compaction.md).

    Before a model call whose input would pass `threshold` of `window_tokens`, the older
    messages are summarised by a model call, keeping the system prompt, the last
    `keep_last` messages and every tool call with its result. A provider's "context too
    long" error compacts once more and retries once before the run fails.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    window_tokens: int | None = Field(default=None, ge=256, le=100_000_000)
    """The model's context window in tokens; None takes the known window of the agent's
    model (`durable_tools.models.context_window`), and a model with none known is refused
    when the config is built."""
    threshold: float = Field(default=0.8, gt=0.0, le=1.0, allow_inf_nan=False)
    """Share of the window the next input may fill before older messages are summarised."""
    keep_last: int = Field(default=6, ge=1, le=1_000)
    """Messages at the end of the conversation never summarised (more when the boundary
    would split a tool call from its result)."""
    summarizer_model: str | None = Field(default=None, min_length=3, max_length=500)
    """The model spec that writes summaries; None: the agent's own model."""
    summary_max_tokens: int = Field(default=1_024, ge=64, le=16_000)
    """Most tokens one summary may have (the summariser's `max_output_tokens`)."""


class ContextView(WireModel):
    """What the model is sent of a compacted conversation: the first `head` messages, a
    user message holding `summary`, then the messages from `until` on."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    head: int = Field(ge=0)
    """Leading messages kept as they are (the system prompt)."""
    until: int = Field(ge=0)
    """The index of the first message sent as it is after the summary."""
    summary: str = Field(max_length=MAX_SUMMARY_CHARS + 1_000)
    """The summary message's text, framing included."""

    def apply(self, conversation: list[Message]) -> list[Message]:
        """The messages to send the model for the whole `conversation`.

        Raises:
            ValueError: the view does not fit the conversation (a corrupt state).
        """
        if not self.head <= self.until <= len(conversation):
            raise ValueError(
                f"the compacted context (head {self.head}, until {self.until}) does not fit "
                f"a conversation of {len(conversation)} messages"
            )
        return [
            *conversation[: self.head],
            Message.user(self.summary),
            *conversation[self.until :],
        ]


def estimate_message_tokens(messages: Iterable[Message]) -> int:
    """About how many tokens `messages` cost a model: characters over `CHARS_PER_TOKEN`.

    Counts what adapters send (content, tool call names and arguments, tool names), plus
    a few tokens a message; deterministic, so workflow code may use it.
    """
    chars = 0
    count = 0
    for message in messages:
        count += 1
        chars += len(message.content or "") + len(message.name or "")
        for call in message.tool_calls:
            chars += len(call.id) + len(call.name) + len(call.arguments)
    return math.ceil(chars / CHARS_PER_TOKEN) + count * _MESSAGE_OVERHEAD_TOKENS


def estimate_tool_tokens(tools: Iterable[ToolDefinition]) -> int:
    """About how many tokens the tool definitions of a request cost."""
    chars = 0
    for tool in tools:
        chars += len(tool.name) + len(tool.description)
        chars += len(json.dumps(tool.parameters, sort_keys=True, separators=(",", ":")))
    return math.ceil(chars / CHARS_PER_TOKEN)
