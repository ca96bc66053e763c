"""The input gate: an MCP server's questions for the user, as a durable pause.

A tool activity whose server needs the user's input (MCP elicitation) completes with a
"needs input" outcome (see `sources/_mcp_input.py`): the questions and the server's
opaque `request_state`. The call then waits, durably, for the `answer_input` update,
shown meanwhile in the `status` query (`pending_inputs`) and the events
(`input.requested`, `input.answered`). The answer (accept with content checked against
the server's schema, decline, or cancel) goes back to the server on the call's next
activity, with the state; the server resumes the call.

The wait (`_wait`, shown as every wait is: `awaiting_input`, `AwaitingTool`, the UI's
details, notifications) ends at the tool's `schedule_to_close_timeout` when it has one,
else at `AgentConfig.input_timeout_seconds` (the model then reads a timeout error), or
when the run is cancelled. A pending question is never carried over continue-as-new: a
run continues only between turns, when no call waits.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, best_match
from pydantic import ValidationError
from temporalio import workflow

from durable_tools.protocol._input_types import (
    INPUT_ACTIONS,
    INPUT_REQUIRED_KEY,
    InputAnswer,
    InputQuestion,
    InputRequired,
    InputResume,
    PendingInput,
)
from durable_tools.protocol._limits import (
    MAX_INPUT_ANSWER_BYTES,
    clip,
)
from durable_tools.protocol._records import ToolCallRecord
from durable_tools.tools import ToolOutcome, ToolTimeout
from durable_tools.tools._formatting import error_outcome
from durable_tools.workflows.gates._wait import (
    accept,
    answer_of,
    check_call_id,
    check_finite,
    check_size,
    close_wait,
    expire_wait,
    open_wait,
    shows,
    wait_for_answer,
    waiting_call,
)
from durable_tools.workflows.run._state import RunState
from durable_tools.workflows.run._valid_call import ValidCall
from durable_tools.workflows.run._wait_maps import GateState

__all__ = ["accept_answer", "ask_user", "check_answer", "needs_input"]


def needs_input(outcome: ToolOutcome) -> InputRequired | None:
    """The server's questions when the activity's outcome is "needs input", else None."""
    if not outcome.is_error or not isinstance(outcome.structured, dict):
        return None
    raw = outcome.structured.get(INPUT_REQUIRED_KEY)
    if raw is None:
        return None
    try:
        return InputRequired.model_validate(raw)
    except ValidationError:
        return None  # not ours after all: the model reads the error as it is


async def ask_user(
    state: RunState, valid: ValidCall, record: ToolCallRecord, needed: InputRequired, round: int
) -> InputResume | ToolOutcome:
    """Wait for the user's answer; returns what to send back, or the call's error outcome.

    Raises:
        asyncio.CancelledError: the run was cancelled while the call waited.
    """
    call, spec = valid.call, valid.spec
    waits = state.gates.inputs
    # The tool's own bound, else (in runs that show input waits) the agent's default.
    limit = spec.policy.schedule_to_close_timeout
    if limit is None and shows(waits):
        limit = state.config.input_timeout_seconds
    now = workflow.now()
    pending = PendingInput(
        call_id=call.id,
        tool=spec.name,
        questions=needed.questions,
        requested_at=now,
        deadline=now + timedelta(seconds=limit) if limit else None,
        round=round,
    )
    record.status = "awaiting_input"
    asked = "; ".join(q.message for q in needed.questions)
    open_wait(state, waits, call, pending, detail=clip(asked, 300), details={"round": round})
    try:
        answered = await wait_for_answer(
            state, waits, call.id, timedelta(seconds=limit) if limit else None
        )
        if not answered:
            expire_wait(state, waits, call, pending, detail=f"no answer within {limit:g}s")
            record.status = "running"
            expired = ToolTimeout(
                f"the user did not answer the MCP server's question within {limit:g}s: {asked}"
            )
            return error_outcome(call.id, spec.name, expired, attempt=record.attempts or 1)
    finally:
        close_wait(state, waits, call.id)
    answer = answer_of(state, waits, call.id, take=True)
    assert answer is not None  # nothing else wakes an input's wait
    record.status = "running"
    state.event("input.answered", call, detail=answer.action, details={"round": round})
    return InputResume(
        responses=_responses(needed.questions, answer), request_state=needed.request_state
    )


def _responses(questions: list[InputQuestion], answer: InputAnswer) -> dict[str, dict[str, Any]]:
    """The MCP `ElicitResult` of each question: one action for all, content per question."""
    responses: dict[str, dict[str, Any]] = {}
    for question in questions:
        response: dict[str, Any] = {"action": answer.action}
        if answer.action == "accept":
            response["content"] = _content_for(questions, question, answer.content)
        responses[question.key] = response
    return responses


def _content_for(questions: list[InputQuestion], question: InputQuestion, content: Any) -> Any:
    # One question: the content is its answer. Several: an object keyed by question key.
    if len(questions) == 1:
        return content or {}
    return (content or {}).get(question.key, {})


def check_answer(gates: GateState, call_id: Any, action: Any, content: Any) -> None:
    """The `answer_input` update's validator: reject what must not enter history.

    Raises:
        ValueError: the answer names no pending question, has an unknown action, is too
            large, holds NaN or an infinity, or does not match the server's requested
            schema.
    """
    check_call_id(call_id)
    if action not in INPUT_ACTIONS:
        raise ValueError(f"action must be one of {', '.join(INPUT_ACTIONS)}, not {action!r}"[:300])
    check_size(content, MAX_INPUT_ANSWER_BYTES, "the answer's content")
    # A `number` schema takes NaN and Infinity, which JSON (and the server) cannot read.
    check_finite(content, "$.content", "the answer")
    pending = waiting_call(gates.inputs, call_id)
    if pending is None:
        raise ValueError(
            f"no question is waiting for an answer in call {call_id[:100]!r} "
            "(unknown call, or already answered or ended)"
        )
    if action != "accept":
        if content is not None:
            raise ValueError(f"a {action} answer carries no content")
        return
    if not isinstance(content, dict):
        raise ValueError("an accept answer needs content: a JSON object matching the schema")
    questions = pending.questions
    for question in questions:
        part = _content_for(questions, question, content)
        problem = _schema_problem(question, part)
        if problem is not None:
            raise ValueError(f"the answer to {question.message!r} {problem}"[:500])


def _schema_problem(question: InputQuestion, content: Any) -> str | None:
    if not isinstance(content, dict):
        return "must be a JSON object"
    try:
        validator = Draft202012Validator(question.requested_schema)
        error = best_match(validator.iter_errors(content))
    except SchemaError:  # the server's schema is broken: only the object shape is checked
        return None
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "the answer"
    return f"does not match the requested schema at {where}: {error.message}"


def accept_answer(gates: GateState, call_id: str, action: str, content: Any) -> str:
    """The `answer_input` update: record the (validated) answer; the first one wins."""
    answer = InputAnswer.model_validate({"call_id": call_id, "action": action, "content": content})
    return accept(gates.inputs, call_id, answer)
