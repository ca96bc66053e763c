"""The client side of sessions: send a message, wait for its answer, close.

A session takes its messages through the `send_message` update, which completes when the
message's answer is ready. `send` waits for that answer in one call. A turn may wait on a
person for days (an approval, an OAuth consent) while the update waits durably in the
run's history, but a client call should not be held open that long: `start_send` returns
once the run has accepted the message, with a `SentMessage` whose `result()` waits for the
answer and whose id (the update's) can be handed to another process (`AgentRun.message`).

`AgentRun.send`, `start_send`, `message` and `close` call the functions here;
`send_with_start` is update-with-start: it starts the session if no run with that id is
running and sends the message in the same request, so a chat front end needs one call per
message, the first one included.
"""

from __future__ import annotations

import uuid
from typing import Any

from temporalio.client import (
    Client,
    WithStartWorkflowOperation,
    WorkflowHandle,
    WorkflowUpdateFailedError,
    WorkflowUpdateHandle,
    WorkflowUpdateStage,
)
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import ApplicationError, WorkflowAlreadyStartedError

from durable_tools.protocol._limits import MAX_MESSAGE_CHARS
from durable_tools.protocol._session_types import REFUSED, SessionReply, message_digest

__all__ = [
    "SentMessage",
    "SessionRefused",
    "check_text",
    "close_session",
    "message_handle",
    "send_with_start",
    "start_message",
    "start_operation",
]


class SessionRefused(ValueError):
    """The session refused the message (or the close): not a session, ended or closing,
    busy answering another message, or the text is empty or too long. Nothing entered
    the run's history."""


class SentMessage:
    """A message a session accepted; `result()` waits for its answer.

    Args:
        handle: The `send_message` update's handle.
        text: The text sent, when this process sent it: the reply must be this text's.
    """

    def __init__(self, handle: WorkflowUpdateHandle[SessionReply], text: str | None = None) -> None:
        self.handle = handle
        self.text = text

    @property
    def id(self) -> str:
        """The message's id (its update's): `AgentRun.message(id)` waits on it elsewhere."""
        return self.handle.id

    @property
    def workflow_run_id(self) -> str | None:
        """The run of the session's chain that took the message (its answer is there)."""
        return self.handle.workflow_run_id

    async def result(self) -> SessionReply:
        """Wait for the message's answer (the run may wait on people meanwhile).

        Raises:
            SessionRefused: the run refused the message, or its id was taken by a message
                with other text (Temporal then hands back that message's reply).
            WorkflowUpdateFailedError: the run failed while answering it.
        """
        try:
            reply = await self.handle.result()
        except WorkflowUpdateFailedError as error:
            if _is_refusal(error):
                raise _refused(error) from None
            raise
        if (
            self.text is not None
            and reply.text_sha256 is not None
            and reply.text_sha256 != message_digest(self.text)
        ):
            raise SessionRefused(
                f"message id {self.id} was taken by message {reply.message}, with other "
                "text: this message was not sent (send it under a new id)"
            )
        return reply


def check_text(text: object) -> str:
    """The message, if the run could take it (checked here too, before anything is sent).

    Raises:
        SessionRefused: not text, blank, or longer than `MAX_MESSAGE_CHARS`.
    """
    if not isinstance(text, str):
        raise SessionRefused(f"a message must be text, got {type(text).__name__}")
    if not text.strip():
        raise SessionRefused("a message must be non-empty text")
    if len(text) > MAX_MESSAGE_CHARS:
        raise SessionRefused(
            f"the message has {len(text):,} characters; the limit is {MAX_MESSAGE_CHARS:,}"
        )
    return text


def _is_refusal(error: WorkflowUpdateFailedError) -> bool:
    return isinstance(error.cause, ApplicationError) and error.cause.type == REFUSED


def _refused(error: WorkflowUpdateFailedError) -> SessionRefused:
    cause = error.cause
    reason = getattr(cause, "message", None) or str(cause or error)
    return SessionRefused(f"the session refused it: {reason}")


async def close_session(handle: WorkflowHandle[Any, Any], name: str, reason: str | None) -> str:
    """Close a session with the update `name`; what the run says ("closed", or "closing
    after the answer to message N").

    Raises:
        SessionRefused: not a session, or it has ended or is closing already.
    """
    try:
        verdict: str = await handle.execute_update(name, reason, result_type=str)
    except WorkflowUpdateFailedError as error:
        raise _refused(error) from None
    return verdict


async def start_message(
    handle: WorkflowHandle[Any, Any], name: str, text: str, message_id: str | None
) -> SentMessage:
    """Send `text` with the update `name` and return once the run accepted it.

    Raises:
        SessionRefused: the run's validator refused it.
    """
    check_text(text)
    try:
        update = await handle.start_update(
            name,
            text,
            id=message_id or f"message-{uuid.uuid4().hex[:12]}",
            wait_for_stage=WorkflowUpdateStage.ACCEPTED,
            result_type=SessionReply,
        )
    except WorkflowUpdateFailedError as error:
        raise _refused(error) from None
    return await _accepted(update, text)


async def _accepted(update: WorkflowUpdateHandle[SessionReply], text: str) -> SentMessage:
    """The message, once the run accepted it.

    Raises:
        SessionRefused: its validator refused it, or its id is a completed message's
            with other text. An update whose outcome is known (rejected, or completed
            under that id before) comes back with it (the SDK keeps it privately): its
            `result()` answers at once, without asking the server.
    """
    sent = SentMessage(update, text)
    if getattr(update, "_known_outcome", None) is not None:
        await sent.result()
    return sent


def message_handle(
    handle: WorkflowHandle[Any, Any], message_id: str, workflow_run_id: str | None
) -> SentMessage:
    """A `SentMessage` for a message sent before (by id), to wait for its answer."""
    return SentMessage(
        handle.get_update_handle(
            message_id, workflow_run_id=workflow_run_id, result_type=SessionReply
        )
    )


async def send_with_start(
    client: Client,
    start: WithStartWorkflowOperation[Any, Any],
    session_id: str,
    text: str,
    message_id: str | None,
) -> SentMessage:
    """Start the session `start` describes unless it runs, and send it `text` (one request).

    Raises:
        SessionRefused: the run refused the message, or a session with that id has ended
            (a new one is not started under an id that was a session already).
    """
    check_text(text)
    try:
        update = await client.start_update_with_start_workflow(
            "send_message",
            text,
            start_workflow_operation=start,
            id=message_id or f"message-{uuid.uuid4().hex[:12]}",
            wait_for_stage=WorkflowUpdateStage.ACCEPTED,
            result_type=SessionReply,
        )
    except WorkflowUpdateFailedError as error:
        raise _refused(error) from None
    except WorkflowAlreadyStartedError:  # the id's run ended, and ids are not reused
        raise SessionRefused(
            f"session {session_id} has ended: start a new one under another id"
        ) from None
    return await _accepted(update, text)


def start_operation(
    workflow: Any, argument: Any, **options: Any
) -> WithStartWorkflowOperation[Any, Any]:
    """The start half of update-with-start: start unless running, never reuse an ended id."""
    return WithStartWorkflowOperation(
        workflow,
        argument,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
        **options,
    )
