"""Every message the model reads for one of its tool calls, built in one place.

A model pairs a result with its call by the call id, so every call of a turn gets
exactly one tool message, whatever happened to it. Each kind of answer has its own
function here, and these are the only code in the workflow that builds a tool message:
the wording the model reads is decided here, not at the stage that answered.

The wording is part of the contract: tests assert on it, and it is in the model
activity's input of every later turn, so changing a text changes what every replayed
run's model activities were given. The error texts themselves come from
`error_message_for_model`, the formatter the tool activities use too.

`at` is passed by the caller: a reply the pipeline stamps later (`_pipeline._bounded`)
leaves it unset, a reply that skips that step stamps it itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from durable_tools.messages import Message
from durable_tools.tools import (
    Cancelled,
    Denied,
    ErrorKind,
    InvalidArguments,
    NeedsAuthorization,
    ToolExecutionError,
    ToolNotFound,
    ToolOutcome,
    ToolTimeout,
)
from durable_tools.tools._errors import error_message_for_model
from durable_tools.tools._formatting import error_outcome

__all__ = [
    "SKIPPED_PREFIX",
    "SUMMARY_INSTRUCTIONS",
    "activity_error_outcome",
    "cancelled_outcome",
    "cancelled_reply",
    "denied_reply",
    "failure_outcome",
    "final_answer_repair_reply",
    "invalid_reply",
    "outcome_unknown_text",
    "over_budget_reply",
    "over_turn_limit_reply",
    "result_reply",
    "script_failed_reply",
    "script_host_error",
    "script_invalid_reply",
    "script_reply",
    "search_reply",
    "skipped_reply",
    "subagent_failure_outcome",
    "subagent_outcome",
    "summary_text",
    "timeout_outcome",
    "unauthorized_reply",
    "unprepared_outcome",
]

SKIPPED_PREFIX = "skipped: the user steered: "
"""Start of the result a skipped call gets; the (shortened) instruction follows."""


def _reply(
    call_id: str, tool: str, text: str, *, is_error: bool | None, at: datetime | None
) -> Message:
    """The one place a tool message is constructed."""
    return Message.tool(call_id, tool, text, is_error=is_error, at=at)


def result_reply(call_id: str, tool: str, outcome: ToolOutcome) -> Message:
    """The outcome of a call that was scheduled: its result, or its error text."""
    return _reply(call_id, tool, outcome.content, is_error=outcome.is_error, at=None)


def invalid_reply(
    call_id: str,
    tool: str,
    error: InvalidArguments | ToolNotFound,
    *,
    available: Sequence[str] = (),
    at: datetime | None = None,
) -> Message:
    """A call that was not run because it is invalid; the text says how to repair it.

    Args:
        call_id: The model's id for the call.
        tool: The tool name as the model wrote it.
        error: What is wrong with the call.
        available: Tool names to suggest when the tool does not exist.
        at: When the reply was made, if the pipeline does not stamp it.
    """
    text = error_message_for_model(call_id, tool, error, available=available)
    return _reply(call_id, tool, text, is_error=True, at=at)


def over_turn_limit_reply(call_id: str, tool: str, asked: int, limit: int, at: datetime) -> Message:
    """A call over `max_tool_calls_per_turn`: not run, and it may be asked for again."""
    text = (
        f"Tool call {call_id} to {tool[:64]!r} was not run: you asked for {asked} "
        f"tool calls in one message, and at most {limit} run per turn "
        f"(max_tool_calls_per_turn); the first {limit} ran. Call it again in a later "
        "message if you still need it."
    )
    return _reply(call_id, tool, text, is_error=True, at=at)


def over_budget_reply(call_id: str, tool: str, limit: int) -> Message:
    """A call over its tool's `max_calls_per_run`: not run, and not to be asked for again.

    `is_error` stays unset, as it always was for this reply: an adapter that forwards
    the flag (Anthropic's) does not mark it as an error.
    """
    text = (
        f"Tool call {call_id} to {tool!r} was not run: the budget of {limit} "
        f"call{'s' if limit != 1 else ''} for tool {tool!r} in this run is used up. "
        f"Do not call {tool!r} again in this run; go on with the results you have "
        "or another tool."
    )
    return _reply(call_id, tool, text, is_error=None, at=None)


def denied_reply(call_id: str, tool: str, why: str) -> Message:
    """A call its approval refused (`why` names who denied it and why)."""
    text = error_message_for_model(call_id, tool, Denied(why))
    return _reply(call_id, tool, text, is_error=True, at=None)


def unauthorized_reply(call_id: str, tool: str, why: str | None) -> Message:
    """A call that did not run because the user's authorization failed or never came."""
    refused = NeedsAuthorization(f"authorization failed: {why}")
    text = error_message_for_model(call_id, tool, refused)
    return _reply(call_id, tool, text, is_error=True, at=None)


def cancelled_outcome(call_id: str, tool: str, reason: str) -> ToolOutcome:
    """The outcome of a scheduled call that a cancel stopped (error kind `Cancelled`).

    The caller names the reason; the defaults differ by where the cancel was seen
    ("the call was cancelled" for the activity's own cancel, the run's cancel reason
    otherwise), and each is kept as it always read.
    """
    return error_outcome(call_id, tool, Cancelled(reason))


def cancelled_reply(call_id: str, tool: str, reason: str, at: datetime) -> Message:
    """A call that the run's cancel stopped before it was scheduled."""
    text = error_message_for_model(call_id, tool, Cancelled(reason))
    return _reply(call_id, tool, text, is_error=True, at=at)


def skipped_reply(call_id: str, tool: str, instruction: str, at: datetime) -> Message:
    """A call a skip-steer stopped before it ran; `instruction` is already shortened."""
    return _reply(call_id, tool, SKIPPED_PREFIX + instruction, is_error=True, at=at)


def search_reply(call_id: str, tool: str, found: Sequence[str], query: str) -> Message:
    """The answer to a tool search: one summary line per tool found, or that none matched."""
    text = (
        "Tools found (callable from your next message):\n" + "\n".join(found)
        if found
        else f"No tool matches {query!r}."
    )
    return _reply(call_id, tool, text, is_error=False, at=None)


def final_answer_repair_reply(call_id: str, tool: str, problems: str) -> Message:
    """A final-answer call whose arguments do not match the output schema.

    Args:
        call_id: The model's id for the call.
        tool: The final-answer tool's name.
        problems: The listing of what does not match (`_final_output._listing`).
    """
    text = problems + f"\nCall `{tool}` again with corrected arguments."
    return _reply(call_id, tool, text, is_error=True, at=None)


def activity_error_outcome(
    call_id: str, tool: str, kind: str, message: str, text: str | None
) -> ToolOutcome:
    """A tool activity that failed with an application error of type `kind`.

    `text` is the message the activity already wrote for the model (its failure's first
    detail), if it wrote one.
    """
    content = (
        text
        if text is not None
        else f"Error [{kind}] tool call {call_id} ({tool}) failed: {message}"
    )
    return ToolOutcome(
        call_id=call_id, tool_name=tool, content=content, is_error=True, error_kind=kind
    )


def timeout_outcome(call_id: str, tool: str, which: str, *, safe_to_repeat: bool) -> ToolOutcome:
    """A tool activity that timed out (`which`: start-to-close, schedule-to-close, ...)."""
    effect = "" if safe_to_repeat else "; it may or may not have taken effect"
    return error_outcome(call_id, tool, ToolTimeout(f"{which} timeout{effect}"))


def failure_outcome(call_id: str, tool: str, why: str) -> ToolOutcome:
    """A tool activity that failed in a way no other builder names."""
    return error_outcome(call_id, tool, ToolExecutionError(why))


def unprepared_outcome(call_id: str, tool: str, why: str) -> ToolOutcome:
    """A call whose preparation (the OAuth preflight) failed before it was scheduled."""
    return failure_outcome(call_id, tool, f"the call could not be prepared: {why}")


def outcome_unknown_text(how: str, reason: str) -> str:
    """What the model (and the timeline) reads of a call cancelled while it ran."""
    return (
        f"outcome unknown: the tool {how} after the cancel, so it may have taken effect "
        f"(and may still be running); cancel reason: {reason}"
    )


def subagent_outcome(
    call_id: str, tool: str, child_id: str, status: str, answer: str | None, *, ok: bool
) -> ToolOutcome:
    """A sub-agent run that ended by itself: its answer (or how it ended) and its run id."""
    return ToolOutcome(
        call_id=call_id,
        tool_name=tool,
        content=f"{answer}\n\n[sub-agent run {child_id}: {status}]",
        is_error=not ok,
        error_kind=None if ok else ErrorKind.EXECUTION.value,
    )


def subagent_failure_outcome(
    call_id: str,
    tool: str,
    child_id: str,
    cause: object,
    *,
    timed_out: bool,
    cancelled: bool = False,
) -> ToolOutcome:
    """A sub-agent run that did not end by itself: it timed out, was cancelled (it closed
    CANCELED: `AgentRun.cancel` on it, or its parent's cancel), or it failed."""
    error: ToolExecutionError | ToolTimeout | Cancelled
    if timed_out:
        error = ToolTimeout(
            f"sub-agent run {child_id} did not finish within its timeout and was ended; "
            "its answer is lost, and tool calls it made may have taken effect"
        )
    elif cancelled:
        error = Cancelled(
            f"sub-agent run {child_id} was cancelled before it answered; its answer is "
            "lost, and tool calls it made may have taken effect"
        )
    else:
        error = ToolExecutionError(f"sub-agent run {child_id} failed: {cause}")
    return error_outcome(call_id, tool, error)


# ------------------------------------------------------- context compaction (not a tool's)

SUMMARY_INSTRUCTIONS = (
    "You summarise the earlier part of a conversation between a user and an AI agent that "
    "uses tools, so that the agent can go on with its task reading your summary in place "
    "of those messages. Keep the user's request and every instruction, constraint or "
    "correction they gave (word for word when short); the decisions taken and why; the "
    "facts, figures, names, identifiers, paths and URLs the agent learned from tool "
    "results and may still need; what was done, what failed and why; what is left to do. "
    "Leave out pleasantries and repetition. Write plain text in the conversation's "
    "language, as short as completeness allows. Do not address the user and do not call "
    "tools: answer with the summary only."
)
"""The summariser's system prompt (`durable_tools.compact`)."""


def summary_text(summary: str, replaced: int) -> str:
    """The message the model reads in place of the older messages of its conversation."""
    return (
        f"[Context summary: the {replaced:,} earlier messages of this conversation were "
        "summarised to fit the model's context window; the full transcript is kept.]\n\n" + summary
    )


# ------------------------------------------------------------------ code mode (run_script)


def script_invalid_reply(call_id: str, tool: str, problems: str) -> Message:
    """A script that was not run: it does not parse, or does not type-check against the
    host functions' signatures (`problems`: the checker's diagnostics). Nothing ran."""
    text = (
        f"Tool call {call_id} ({tool}) was not run: the script does not check against the "
        f"host functions' signatures, so none of its calls were made.\n{problems}\n"
        f"Fix the script and call `{tool}` again."
    )
    return _reply(call_id, tool, text, is_error=True, at=None)


def script_reply(call_id: str, tool: str, output: str, result: str, host_calls: int) -> Message:
    """A script that ran to its end: what it printed and the value of its last line."""
    printed = f"output:\n{output}\n" if output else ""
    text = f"{printed}result: {result}\n[script made {host_calls} host call(s)]"
    return _reply(call_id, tool, text, is_error=False, at=None)


def script_failed_reply(
    call_id: str,
    tool: str,
    error: str,
    output: str,
    host_calls: int,
    ran: int,
    bound: str | None,
) -> Message:
    """A script that raised, or was stopped at a bound (`bound` names it); of the
    `host_calls` it made before, `ran` started their tool (the others were refused or
    denied, or were sleeps, and did nothing)."""
    if not host_calls:
        made = "before making any host call"
    elif ran == host_calls:
        made = f"after {host_calls} host call(s), which did run (do not repeat them blindly)"
    elif ran:
        made = (
            f"after {host_calls} host call(s), of which {ran} did run (do not repeat them "
            f"blindly) and {host_calls - ran} did not (refused, denied or sleeps)"
        )
    else:
        made = f"after {host_calls} host call(s), none of which ran a tool"
    stopped = f"\nIt was stopped at {bound}." if bound else ""
    printed = f"\noutput before it stopped:\n{output}" if output else ""
    text = f"Error: the script of tool call {call_id} ({tool}) stopped {made}:\n{error}"
    return _reply(call_id, tool, text + stopped + printed, is_error=True, at=None)


def script_host_error(function: str, why: str) -> str:
    """The message of the exception a script's host call raises when it cannot be made
    (not a tool's own failure: that message is the one the model would read)."""
    return f"{function}(): {why}"
