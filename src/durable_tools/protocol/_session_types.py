"""A session's wire types: its configuration, what it carries and shows, and one reply.

A run started with `AgentConfig(session=SessionConfig(...))` does not end at its answer:
it waits, durably, for the next user message (docs/sessions.md).
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from durable_tools._durations import Seconds
from durable_tools._wire import WireModel

__all__ = [
    "ANSWERED_CARRIED",
    "ANSWERED_CARRIED_BYTES",
    "CARRIED_ANSWER_CHARS",
    "DEFAULT_IDLE_TIMEOUT_SECONDS",
    "FAILED",
    "REFUSED",
    "AnsweredMessage",
    "SessionCarried",
    "SessionConfig",
    "SessionReply",
    "SessionView",
    "message_digest",
]

DEFAULT_IDLE_TIMEOUT_SECONDS = 7 * 86_400.0
"""A week: how long a session waits for its next message unless configured."""


REFUSED = "SessionRefused"
"""The `ApplicationError` type a session fails a `send_message` or `close` update with when
it refuses it (the client raises `SessionRefused`)."""

FAILED = "SessionFailed"
"""The `ApplicationError` type a session fails a `send_message` update with when an activity
or a child failed the run while the message was in flight (the catalog's at the start,
say): the error's message is the run's reason, and the execution fails with it."""


CARRIED_ANSWER_CHARS = 64_000
"""Most characters of the last answer a session carries over continue-as-new."""


ANSWERED_CARRIED = 100
"""Most answered message ids a session carries over continue-as-new (the newest ones),
so that a client that lost a reply and retries under the same id after the session
continued is answered with that reply instead of sending the message again."""

ANSWERED_CARRIED_BYTES = 256 * 1024
"""Most bytes (JSON) of answered messages a session carries over continue-as-new. The
newest replies are kept whole while they fit; older ids keep only their number and text
digest (a retry of one is refused, never taken as a new message); past the bound even
those are dropped (a retry of one is a new message)."""


class SessionConfig(BaseModel):
    """Makes a run a session: after each answer it waits for the next user message."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    idle_timeout_seconds: Seconds = DEFAULT_IDLE_TIMEOUT_SECONDS
    """How long the session waits for the next message after an answer (a durable timer,
    kept across continue-as-new); then it ends `completed`, saying it was idle."""


class SessionView(BaseModel):
    """A session's part of the `status` query."""

    messages: int = 0
    """Messages received so far."""
    answering: int | None = None
    """The number of the message being answered; None while the session awaits one."""
    idle_deadline: datetime | None = None
    """While it awaits a message: when it stops waiting and ends."""
    closing: str | None = None
    """A close was asked while a message was being answered: it ends after the answer."""


class SessionReply(BaseModel):
    """What `send_message` returns: the answer to one message, and where the run is now."""

    message: int
    """The message's number in the session (1 is the first)."""
    status: str
    """`awaiting_message` when the session goes on; else how the run ended (a limit, a
    cancel, a close asked while this message was being answered: `completed`)."""
    answer: str | None = None
    """The model's final text for this message (None when the run ended without one)."""
    output: Any = None
    """With `AgentConfig.output_type`: the validated answer as a JSON object."""
    reason: str | None = None
    """Why the run ended, when this message ended it."""
    turns: int = Field(default=0, ge=0)
    """Model turns this message took."""
    tool_calls: int = Field(default=0, ge=0)
    """Tool calls this message made."""
    text_sha256: str | None = None
    """`message_digest` of the message's text. Temporal takes an update id once per run
    and hands a second update under it the first one's outcome: a client that reused a
    message id for other text compares it and tells its caller the message was not
    taken (None from a run of an earlier version)."""


class AnsweredMessage(WireModel):
    """A message a session answered, by its id (its `send_message` update's): what a
    retry under that id is answered with after the session continued-as-new."""

    id: str
    """The message's id (the update id), or `sha256:<hex>` of a longer one."""
    message: int
    """The message's number in the session."""
    text_sha256: str
    """`message_digest` of its text: a retry with other text is refused."""
    reply: SessionReply | None = None
    """The reply it was given; None when it did not fit `ANSWERED_CARRIED_BYTES`."""


class SessionCarried(WireModel):
    """What a session carries over continue-as-new (it continues only while idle)."""

    messages: int = 0
    """Messages received so far (the start prompt, when there was one, is message 1)."""
    idle_deadline: datetime | None = None
    """When the wait for the next message times out: not restarted by continue-as-new."""
    answer: str | None = None
    """The last answer (cut to `CARRIED_ANSWER_CHARS`): the run's final answer if the
    session ends before the next one. The whole text stays in the conversation."""
    output: Any = None
    """The last answer's structured output (with `AgentConfig.output_type`)."""
    answered: list[AnsweredMessage] = Field(default_factory=list)
    """The latest answered messages, oldest first (bounded by `ANSWERED_CARRIED` and
    `ANSWERED_CARRIED_BYTES`); empty from a run of an earlier version."""


def message_digest(text: str) -> str:
    """The SHA-256 of a message's text (UTF-8), in hex: what `SessionReply.text_sha256` holds."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
