"""Sessions: a run that, after each answer, waits durably for the user's next message.

The loop answers one message at a time (`run_session` around the agent loop); between
messages the run awaits `send_message` with no activity and no worker slot held (a
`wait_condition` with a durable timer for `SessionConfig.idle_timeout_seconds`), and it
continues-as-new there when its history is long. Inside each message's turns everything
a run does works as in any run: steering, approvals, OAuth, callbacks, questions.

One message at a time: while a message is being answered, the next is refused with an
error saying so (no queue). A chat front end sends after each answer; a person who wants
to redirect the turn in progress steers it. A refusal keeps the number of updates in
flight at one per session (Temporal bounds them per workflow) and leaves no queued
message for continue-as-new to carry.

A message is identified by its id (its update's). Temporal answers a second update under
an id the run took already with the first one's outcome, but only within one run: the
session keeps its latest answered ids, with their text digest and reply, and carries them
over continue-as-new (bounded), so a client that lost a reply and retries after the
session continued gets that reply, and the message's tools do not run again.

This wait is not `gates._wait`'s: that one pauses a tool call inside a turn; this one is
the run's own wait between turns, with its own status (`awaiting_message`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ApplicationError

from durable_tools.messages import Message
from durable_tools.protocol._limits import MAX_CANCEL_REASON_CHARS, MAX_MESSAGE_CHARS, clip
from durable_tools.protocol._session_types import (
    FAILED,
    REFUSED,
    AnsweredMessage,
    SessionReply,
    message_digest,
)
from durable_tools.protocol._types import RunStatus
from durable_tools.workflows.catalog._run_catalog import note_durable_wait
from durable_tools.workflows.loop._continue import continue_as_new_due, continue_now
from durable_tools.workflows.observe._visibility import FINAL, publish
from durable_tools.workflows.run._session import Session
from durable_tools.workflows.run._state import EndRun, RunState

__all__ = [
    "MESSAGES_PER_RUN",
    "check_close",
    "check_message",
    "refusal",
    "reply_to",
    "request_close",
    "retried_reply",
    "run_session",
    "take_message",
]

MESSAGES_PER_RUN = 500
"""Messages one run of a session's chain takes before it continues-as-new (while idle).
Each message is an update recorded in the run's history, and Temporal bounds the updates
of one workflow run (2,000 by default, decisions and other updates included)."""

ANSWERED_RETRY_PATCH = "session-answered-retry"
"""Marks a run that answered a message id taken in an earlier run of its chain with that
message's reply (carried). A history recorded before took such a retry as a new message,
and replays so."""

_NOTE_CHARS = 200
"""Characters of a message or answer an event's detail holds (events live in memory)."""


async def run_session(
    state: RunState, answer: Callable[[], Awaitable[None]], *, continue_as_new: bool
) -> None:
    """Answer the session's messages, one at a time, until it closes.

    Args:
        state: The run's state, with `state.session` set.
        answer: Runs the agent loop on the conversation until the model's final answer.
        continue_as_new: Whether the session may continue-as-new while idle (only the
            agent workflow owns its history).

    Raises:
        EndRun: the session was closed, idle too long, or cancelled (or a limit ended it).
    """
    session = _session_of(state)
    if session.answering is not None:  # started with a prompt: it is message 1
        state.event("session.message", detail=f"#1 (the prompt) {state.input.prompt[:100]}")
        await _answer(state, session, answer)
    while True:
        await _await_message(state, session, continue_as_new=continue_as_new)
        await _answer(state, session, answer)


async def _answer(state: RunState, session: Session, answer: Callable[[], Awaitable[None]]) -> None:
    number = session.answering
    assert number is not None
    # Per-message bounds: each message gets the turn, call and repair budgets anew.
    state.turn_base, state.tool_calls_base, state.output_repairs = state.turn, state.tool_calls, 0
    state.final_answer, state.output = None, None
    await answer()
    session.answering = None
    text = state.final_answer or ""
    state.event("session.answered", detail=f"#{number}: {text[:_NOTE_CHARS]}")
    session.replies[number] = SessionReply(
        message=number,
        status=(RunStatus.AWAITING_MESSAGE if session.closing is None else RunStatus.COMPLETED),
        answer=state.final_answer,
        output=state.output,
        turns=state.turn - state.turn_base,
        tool_calls=state.tool_calls - state.tool_calls_base,
    )


async def _await_message(state: RunState, session: Session, *, continue_as_new: bool) -> None:
    """Wait for the next message and put it in the conversation.

    Raises:
        EndRun: cancelled, closed, or no message before the idle deadline.
    """
    timeout = session.config.idle_timeout_seconds
    if session.idle_deadline is None:
        session.idle_deadline = workflow.now() + timedelta(seconds=timeout)

    def ready() -> bool:
        return (
            session.inbox is not None
            or session.closing is not None
            or state.cancel_reason is not None
        )

    if not ready():
        publish(state, f"Answered {session.messages} message(s); waiting for the next one.")
        if continue_as_new:
            await _continue_if_due(state, session)
    remaining = (session.idle_deadline - workflow.now()).total_seconds()
    if not ready() and remaining > 0:
        with contextlib.suppress(TimeoutError):  # the idle deadline passed: closed below
            await workflow.wait_condition(
                ready, timeout=timedelta(seconds=remaining), timeout_summary="session idle timeout"
            )
        note_durable_wait(state)  # the worker's tools may have changed meanwhile
    state.check_cancelled()
    if session.inbox is not None:
        text, session.inbox = session.inbox, None
        session.answering = session.messages
        session.idle_deadline = None
        state.conversation.append(Message.user(text))
        publish(state, f"Answering message {session.messages}.")
        return
    reason = session.closing or f"no message for {timeout:g} s (idle_timeout_seconds)"
    state.event("session.closed", detail=reason)
    raise EndRun(RunStatus.COMPLETED, f"session closed: {reason}")


async def _continue_if_due(state: RunState, session: Session) -> None:
    """Continue-as-new now, while nothing of the session is open, if the history is long."""
    if not (continue_as_new_due(state) or session.messages_this_run >= MESSAGES_PER_RUN):
        return
    # The last message's update must have taken its reply; a message that arrives
    # meanwhile is answered first (its update waits for that answer), and the next wait
    # tries again.
    await workflow.wait_condition(
        lambda: workflow.all_handlers_finished() or session.inbox is not None
    )
    # No `let_a_cancel_in` wait here: a client that sends each message as soon as the
    # last answer is back would land one in every such wait, and the session would
    # never continue as new.
    if session.inbox is None and session.closing is None and state.cancel_reason is None:
        continue_now(state)


# --------------------------------------------------------------- handler bodies


def refusal(reason: str) -> ApplicationError:
    """The error a refused message or close fails its update with (before it enters
    history, from a validator; or, in a race two validators passed, from the handler)."""
    return ApplicationError(reason, type=REFUSED, non_retryable=True)


def _session_of(state: RunState) -> Session:
    if state.session is None:
        raise refusal(
            f"run {workflow.info().workflow_id} is not a session: start it with "
            "AgentConfig(session=SessionConfig()) to send it messages"
        )
    return state.session


def _check_open(state: RunState) -> Session:
    session = _session_of(state)
    if state.status in FINAL:
        raise refusal(f"the session has ended ({state.status.value})")
    if state.cancel_reason is not None:
        raise refusal("the session is being cancelled")
    if session.closing is not None:
        raise refusal(f"the session is closing ({session.closing})")
    return session


def check_message(state: RunState, text: object) -> None:
    """The `send_message` validator: refuse what the session cannot take now.

    A retry of a message answered in an earlier run of the chain (its id is among the
    carried ones) passes whatever the session is doing: the handler answers it with its
    reply.

    Raises:
        ApplicationError: (`REFUSED`) not a session, ended or closing, busy with a
            message, or the text is not text, blank, too long or not encodable; or the
            id is an answered message's and the text is not its text, or its reply is
            no longer kept.
    """
    earlier = _answered_before(state)
    if earlier is not None and isinstance(text, str):
        _check_retry(earlier, text)
        return
    _check_new_message(state, text)


def _check_new_message(state: RunState, text: object) -> None:
    """Refuse a new message the session cannot take now (`check_message`'s checks)."""
    session = _check_open(state)
    if session.busy:
        raise refusal(
            f"the session is answering message {session.answering or session.messages}: "
            "send the next message after its answer, or steer the turn in progress"
        )
    if not isinstance(text, str):
        raise refusal(f"a message must be text, got {type(text).__name__}")
    if not text.strip():
        raise refusal("a message must be non-empty text")
    if len(text) > MAX_MESSAGE_CHARS:
        raise refusal(
            f"the message has {len(text):,} characters; the limit is {MAX_MESSAGE_CHARS:,}"
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise refusal("the message holds characters that are not valid UTF-8") from None


def take_message(state: RunState, text: object) -> int:
    """Accept a message for the loop (checked again: two may pass the validator in one
    workflow task); its number in the session.

    Raises:
        ApplicationError: the message is refused (fails this update, not the run).
    """
    # A new message's checks, even under an answered id: `retried_reply` decided already
    # (a history recorded before the retries were answered takes it as a new message).
    _check_new_message(state, text)
    assert isinstance(text, str) and state.session is not None
    session = state.session
    session.messages += 1
    session.messages_this_run += 1
    session.inbox = text
    state.event("session.message", detail=f"#{session.messages} {text[:_NOTE_CHARS]}")
    return session.messages


def retried_reply(state: RunState, text: object) -> SessionReply | None:
    """The reply to a message answered in an earlier run of the chain under this
    update's id (a client's retry), or None when the update is a new message.

    Raises:
        ApplicationError: (`REFUSED`) the id's message had other text, or its reply is
            no longer kept.
    """
    earlier = _answered_before(state)
    if earlier is None or not isinstance(text, str):
        return None
    if not workflow.patched(ANSWERED_RETRY_PATCH):
        return None
    reply = _check_retry(earlier, text)
    state.event("session.retried", detail=f"#{reply.message} answered again with its reply")
    return reply


def _answered_before(state: RunState) -> AnsweredMessage | None:
    """The answered message whose id this `send_message` update has, if kept."""
    info = workflow.current_update_info()
    if state.session is None or info is None:
        return None
    return state.session.answered_as(info.id)


def _check_retry(earlier: AnsweredMessage, text: str) -> SessionReply:
    """`earlier`'s reply, for a retry with the same text.

    Raises:
        ApplicationError: (`REFUSED`) other text under the id, or a reply not kept.
    """
    info = workflow.current_update_info()
    shown = (info.id if info is not None else earlier.id)[:100]
    if message_digest(text) != earlier.text_sha256:
        raise refusal(
            f"message id {shown} was taken by message {earlier.message}, with other text: "
            "this message was not sent (send it under a new id)"
        )
    if earlier.reply is None:
        raise refusal(
            f"message id {shown} was answered (message {earlier.message}) in an earlier run "
            "of this session and its reply is no longer kept (too large to carry): read "
            "the answer in the conversation; the message was not sent again"
        )
    return earlier.reply


async def reply_to(state: RunState, number: int, text: str) -> SessionReply:
    """Wait for message `number`'s answer (or for the run to end) and return it, with
    the digest of its `text` (a client that reused the message's id can tell); keep it
    as the answer to this update's id, for a retry after continue-as-new.

    Raises:
        ApplicationError: (`FAILED`) an activity or a child failed the run meanwhile (the
            execution fails with it): the message has no answer, and the error says why.
    """
    session = _session_of(state)
    await workflow.wait_condition(lambda: number in session.replies or state.status in FINAL)
    if state.failing and number not in session.replies:
        raise ApplicationError(
            f"the session failed while answering message {number}: {state.reason}",
            type=FAILED,
            non_retryable=True,
        )
    reply = session.replies.pop(number, None)
    if reply is not None:
        reply = reply.model_copy(update={"text_sha256": message_digest(text)})
        info = workflow.current_update_info()
        if info is not None:
            session.remember(info.id, reply)
        return reply
    return SessionReply(  # the run ended while answering (a limit, a cancel, a failure)
        text_sha256=message_digest(text),
        message=number,
        status=state.status.value,
        answer=state.final_answer,
        output=state.output,
        reason=state.reason,
        turns=state.turn - state.turn_base,
        tool_calls=state.tool_calls - state.tool_calls_base,
    )


def check_close(state: RunState, reason: object) -> None:
    """The `close` validator.

    Raises:
        ApplicationError: (`REFUSED`) not a session, already ended, cancelled or
            closing, or the reason is not text or longer than `MAX_CANCEL_REASON_CHARS`.
    """
    _check_open(state)
    if reason is not None and not isinstance(reason, str):
        raise refusal(f"a close reason must be text, got {type(reason).__name__}")
    # An update's argument is recorded in history: refused when long, not cut after.
    if isinstance(reason, str) and len(reason) > MAX_CANCEL_REASON_CHARS:
        raise refusal(
            f"the close reason has {len(reason):,} characters; "
            f"the limit is {MAX_CANCEL_REASON_CHARS:,}"
        )


def request_close(state: RunState, reason: object) -> str:
    """Close the session: now when it awaits a message, else after the current answer.

    Raises:
        ApplicationError: the close is refused (fails this update, not the run).
    """
    check_close(state, reason)
    session = _session_of(state)
    text = reason if isinstance(reason, str) and reason.strip() else "closed by request"
    session.closing = clip(text, MAX_CANCEL_REASON_CHARS)
    state.event("session.close_requested", detail=session.closing)
    if session.busy:
        return f"closing after the answer to message {session.answering or session.messages}"
    return "closed"
