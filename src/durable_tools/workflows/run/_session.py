"""A session's state inside its run: the message it is answering, the next one, the close,
and the messages it answered lately (by id, for a client that retries one).

Data only (the loop's `_session` drives it), so that `_state` can hold it without importing
workflow code. Carried over continue-as-new as a `SessionCarried`: a session continues only
while it awaits a message, when nothing else of it is open.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pydantic_core

from durable_tools.protocol._limits import clip
from durable_tools.protocol._session_types import (
    ANSWERED_CARRIED,
    ANSWERED_CARRIED_BYTES,
    CARRIED_ANSWER_CHARS,
    AnsweredMessage,
    SessionCarried,
    SessionConfig,
    SessionReply,
    SessionView,
)

__all__ = ["MESSAGE_ID_CHARS", "Session", "answered_key", "bounded_answered"]

MESSAGE_ID_CHARS = 200
"""Longest message id kept as it is among the answered ones; a longer one is kept as its
SHA-256 (`answered_key`), so that a client's long ids cannot grow what is carried (so is
one that starts `sha256:`, so that no id can spell another's key)."""


@dataclass
class Session:
    """One session's messages and wait."""

    config: SessionConfig
    messages: int = 0
    """Messages received so far, the start prompt included: the next one's number - 1."""
    inbox: str | None = None
    """A message accepted by `send_message` that the loop has not taken yet."""
    answering: int | None = None
    """The number of the message the loop is answering now."""
    idle_deadline: datetime | None = None
    """While awaiting a message: when the wait ends (carried, so continue-as-new keeps it)."""
    closing: str | None = None
    """Why a close was asked; the session ends at its next wait for a message."""
    messages_this_run: int = 0
    """Messages received in this run of the chain (bounds the updates one history holds)."""
    replies: dict[int, SessionReply] = field(default_factory=dict)
    """Replies built for `send_message` callers that have not taken them yet."""
    answered: dict[str, AnsweredMessage] = field(default_factory=dict)
    """The latest answered messages by `answered_key` of their id, oldest first (at most
    `ANSWERED_CARRIED`): carried, so that a retry after continue-as-new gets its reply."""

    @classmethod
    def start(cls, config: SessionConfig, carried: SessionCarried | None, prompt: str) -> Session:
        """A new session's state, or a continued one's.

        A new session started with a prompt is answering it (message 1) from the start, so
        a message sent before the first answer is refused; one started without a prompt
        awaits its first message (update-with-start sends it in the same call).
        """
        if carried is None:
            return cls(config, messages=1, answering=1) if prompt else cls(config)
        return cls(
            config,
            messages=carried.messages,
            idle_deadline=carried.idle_deadline,
            answered={entry.id: entry for entry in carried.answered[-ANSWERED_CARRIED:]},
        )

    @property
    def busy(self) -> bool:
        """A message is accepted and not answered yet: the next one is refused."""
        return self.inbox is not None or self.answering is not None

    def remember(self, message_id: str, reply: SessionReply) -> None:
        """Keep `reply` (holding its message's digest) as message `message_id`'s answer."""
        key = answered_key(message_id)
        self.answered.pop(key, None)
        self.answered[key] = AnsweredMessage(
            id=key, message=reply.message, text_sha256=reply.text_sha256 or "", reply=reply
        )
        while len(self.answered) > ANSWERED_CARRIED:
            del self.answered[next(iter(self.answered))]

    def answered_as(self, message_id: str) -> AnsweredMessage | None:
        """The answered message that had the id `message_id`, if it is still kept."""
        return self.answered.get(answered_key(message_id))

    def carried(self, answer: str | None, output: Any) -> SessionCarried:
        """What the next run of the chain starts from (`answer`: the run's last one)."""
        return SessionCarried(
            messages=self.messages,
            idle_deadline=self.idle_deadline,
            answer=None if answer is None else clip(answer, CARRIED_ANSWER_CHARS),
            output=output,
            answered=bounded_answered(list(self.answered.values())),
        )

    def view(self) -> SessionView:
        """The session's part of the `status` query."""
        return SessionView(
            messages=self.messages,
            answering=self.answering,
            idle_deadline=None if self.busy else self.idle_deadline,
            closing=self.closing,
        )


_DIGEST_PREFIX = "sha256:"


def answered_key(message_id: str) -> str:
    """How an answered message's id is kept: as it is, or `sha256:<hex>` when long, or
    when it starts like a digest (an id spelling another id's key is not that id)."""
    if len(message_id) <= MESSAGE_ID_CHARS and not message_id.startswith(_DIGEST_PREFIX):
        return message_id
    digest = hashlib.sha256(message_id.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{_DIGEST_PREFIX}{digest}"


def bounded_answered(
    answered: list[AnsweredMessage], budget: int = ANSWERED_CARRIED_BYTES
) -> list[AnsweredMessage]:
    """The newest of `answered` (oldest first) that fit `budget` bytes of JSON: whole
    while they fit, then without their reply (a retry of one is refused, not run again),
    then none."""
    kept: list[AnsweredMessage] = []
    used = 0
    for entry in reversed(answered[-ANSWERED_CARRIED:]):
        cost = len(pydantic_core.to_json(entry))
        if used + cost > budget and entry.reply is not None:
            entry = entry.model_copy(update={"reply": None})
            cost = len(pydantic_core.to_json(entry))
        if used + cost > budget:
            break
        kept.append(entry)
        used += cost
    kept.reverse()
    return kept
