"""The client side of MCP elicitation: answer a run's pending question.

A tool whose MCP server needs the user's input pauses its run (see
`workflows/gates/_input_gate.py`); the question shows in `run.status().pending_inputs` and in
`durable-tools show`. `answer_input` sends the user's answer with the run's
`answer_input` update: the run checks it (content against the server's schema, size,
a question actually waiting) before it enters history, and resumes the call.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from temporalio.client import WorkflowHandle, WorkflowUpdateFailedError

from durable_tools.client.render._text import terminal_safe
from durable_tools.protocol._input_types import PendingInput
from durable_tools.protocol._limits import check_handler_prefix
from durable_tools.protocol._resume import answer_command

__all__ = ["InputAnswerRejected", "answer_input", "render_pending_input"]


class InputAnswerRejected(ValueError):
    """The run refused the answer (no such question, bad action, content off-schema)."""


class _HasHandle(Protocol):
    @property
    def handle(self) -> WorkflowHandle[Any, Any]: ...


async def answer_input(
    run_or_handle: WorkflowHandle[Any, Any] | _HasHandle,
    call_id: str,
    action: Literal["accept", "decline", "cancel"],
    content: dict[str, Any] | None = None,
    *,
    prefix: str = "",
) -> str:
    """Answer the question a tool call's MCP server asks the user.

    Args:
        run_or_handle: An `AgentRun` (`tools.run(...)`) or the run's workflow handle.
        call_id: The waiting tool call (`PendingInput.call_id`).
        action: "accept" (with `content`), "decline" or "cancel".
        content: For accept: a JSON object matching the question's requested schema (for
            several questions at once, an object keyed by question key).
        prefix: For an agent loop embedded in a workflow of your own (`run_or_handle` is
            that workflow's): the loop's handler prefix (`AgentLoop.register_handlers`).

    Returns:
        "accepted", or "already answered" when another answer won the race.

    Raises:
        InputAnswerRejected: the run refused the answer; the message says why. Nothing
            entered the run's history, and the question still waits.
        ValueError: `prefix` is not a handler prefix a loop can have.
    """
    name = check_handler_prefix(prefix) + "answer_input"
    handle = run_or_handle if isinstance(run_or_handle, WorkflowHandle) else run_or_handle.handle
    try:
        result: str = await handle.execute_update(
            name, args=[call_id, action, content], result_type=str
        )
    except WorkflowUpdateFailedError as error:
        cause = error.cause
        reason = getattr(cause, "message", None) or str(cause or error)
        raise InputAnswerRejected(f"the run refused the answer: {reason}") from None
    return result


def render_pending_input(run_id: str, pending: PendingInput) -> str:
    """A waiting question for the terminal: what is asked, the fields, how to answer."""
    call = terminal_safe(pending.call_id)
    lines = [f"call {call} ({terminal_safe(pending.tool)}) asks the user:"]
    for question in pending.questions:
        lines.append(f"  {terminal_safe(question.message, multiline=True)}")
        properties = question.requested_schema.get("properties")
        required = set(question.requested_schema.get("required") or ())
        for name, field in (properties if isinstance(properties, dict) else {}).items():
            kind = field.get("type", "any") if isinstance(field, dict) else "any"
            note = "" if name in required else ", optional"
            lines.append(f"    {terminal_safe(str(name))}: {terminal_safe(str(kind))}{note}")
    if pending.deadline is not None:
        lines.append(f"  answer before {pending.deadline:%Y-%m-%d %H:%M:%S} UTC")
    lines.append(
        f"  answer: {terminal_safe(answer_command(run_id, pending.call_id))} | --decline | --cancel"
    )
    return "\n".join(lines)
