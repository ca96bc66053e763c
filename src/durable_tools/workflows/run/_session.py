"""A session's state inside its run: the message it is answering, the next one, the close.

Data only (the loop's `_session` drives it), so that `_state` can hold it without importing
workflow code. Carried over continue-as-new as a `SessionCarried`: a session continues only
while it awaits a message, when nothing else of it is open.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from durable_tools.protocol._limits import clip
from durable_tools.protocol._session_types import (
    CARRIED_ANSWER_CHARS,
    SessionCarried,
    SessionConfig,
    SessionReply,
    SessionView,
)

__all__ = ["Session"]


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

    @classmethod
    def start(cls, config: SessionConfig, carried: SessionCarried | None, prompt: str) -> Session:
        """A new session's state, or a continued one's.

        A new session started with a prompt is answering it (message 1) from the start, so
        a message sent before the first answer is refused; one started without a prompt
        awaits its first message (update-with-start sends it in the same call).
        """
        if carried is None:
            return cls(config, messages=1, answering=1) if prompt else cls(config)
        return cls(config, messages=carried.messages, idle_deadline=carried.idle_deadline)

    @property
    def busy(self) -> bool:
        """A message is accepted and not answered yet: the next one is refused."""
        return self.inbox is not None or self.answering is not None

    def carried(self, answer: str | None, output: Any) -> SessionCarried:
        """What the next run of the chain starts from (`answer`: the run's last one)."""
        return SessionCarried(
            messages=self.messages,
            idle_deadline=self.idle_deadline,
            answer=None if answer is None else clip(answer, CARRIED_ANSWER_CHARS),
            output=output,
        )

    def view(self) -> SessionView:
        """The session's part of the `status` query."""
        return SessionView(
            messages=self.messages,
            answering=self.answering,
            idle_deadline=None if self.busy else self.idle_deadline,
            closing=self.closing,
        )
