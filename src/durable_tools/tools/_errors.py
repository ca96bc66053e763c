"""One error taxonomy for every tool failure.

What a run does with an error is decided where it happens, not here: `retryable` (and
`retry_after`) feed the retry policy; everything else reaches the model as an error
message under the call id, except `NeedsAuthorization`, which pauses the run for the
user's OAuth grant (`workflows/gates/_authorization_gate.py`), and an error raised with
`ends_run=True`, which ends the whole run (`workflows/calls/_execute.py`). What the model
reads of each kind is here too (`error_message_for_model`), next to the kinds it words.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Any

__all__ = [
    "RUN_ENDING",
    "Cancelled",
    "Denied",
    "ErrorKind",
    "InvalidArguments",
    "NeedsAuthorization",
    "ToolError",
    "ToolExecutionError",
    "ToolNotFound",
    "ToolTimeout",
    "error_message_for_model",
]


class ErrorKind(StrEnum):
    """What went wrong. The value is stable: it is the Temporal application error type."""

    NOT_FOUND = "ToolNotFound"
    INVALID_ARGUMENTS = "InvalidArguments"
    EXECUTION = "ToolExecutionError"
    TIMEOUT = "ToolTimeout"
    UNAUTHORIZED = "NeedsAuthorization"
    DENIED = "Denied"
    CANCELLED = "Cancelled"
    OUTPUT_LOST = "ToolOutputLost"
    """Not a failure: the tool ran, but its output could not be stored or formatted.
    Never retried (the tool's side effects happened); the model is told so."""
    BUDGET_EXHAUSTED = "BudgetExhausted"
    """The run used up the tool's `max_calls_per_run`: the call never ran."""


_USER_ERRORS = frozenset(
    {
        ErrorKind.NOT_FOUND,
        ErrorKind.INVALID_ARGUMENTS,
        ErrorKind.DENIED,
        ErrorKind.UNAUTHORIZED,
        ErrorKind.BUDGET_EXHAUSTED,
    }
)
"""Kinds the caller (the model, or the person it acts for) can fix by changing the call or
granting what it needs; every other kind is the tool's or the system's."""


RUN_ENDING = "ends_run"
"""The third detail of a tool activity's failure when its error ends the run (`ends_run`):
a marker only a tool that asked for it produces, so no run recorded before it takes the
run-ending branch on replay."""


class ToolError(Exception):
    """Base of every classified tool error.

    Args:
        message: What the model (or operator) reads. Never put secrets here.
        retryable: Whether trying again may help.
        retry_after: Seconds to wait before the next attempt, when the cause says so.
        details: JSON-able extra data for operators.
        user_error: Whether the caller caused it (a wrong order id, a missing permission)
            rather than the tool or the systems it uses; None: as its kind says
            (`is_user_error`).
        ends_run: Whether the error ends the whole run, not only the call: the tool found
            that going on would do harm (a corrupted ledger, a revoked contract). The run
            fails naming the tool and the call; the call is never retried (`retryable` is
            ignored) and the model is not asked what to do next.
    """

    kind: ErrorKind = ErrorKind.EXECUTION
    user_error: bool | None = None

    tool_name: str | None = None
    """The tool that failed: filled in by the runtime (`ToolRegistry.invoke`, which the
    tool activity runs) when the tool did not set it."""
    call_id: str | None = None
    """The model's id of the failed call, filled in by the runtime as `tool_name`."""

    def __init__(
        self,
        message: str,
        *,
        retryable: bool = False,
        retry_after: float | None = None,
        details: dict[str, Any] | None = None,
        user_error: bool | None = None,
        ends_run: bool = False,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.ends_run = ends_run
        self.retryable = retryable and not ends_run
        self.retry_after = retry_after
        self.details = details or {}
        self.user_error = user_error

    def is_retryable(self) -> bool:
        """Whether trying the same call again may help (transient failures, timeouts)."""
        return self.retryable

    def is_user_error(self) -> bool:
        """Whether the caller must change something (the arguments, a grant, a decision)
        for the call to succeed, rather than the tool or its systems being at fault.

        True for `InvalidArguments`, `ToolNotFound`, `Denied`, `NeedsAuthorization` and a
        used-up call budget, unless the error was raised with `user_error=` saying otherwise.
        """
        if self.user_error is not None:
            return self.user_error
        return self.kind in _USER_ERRORS

    def attribute_to(self, *, tool_name: str, call_id: str) -> None:
        """Name the tool and the call the error came from, where the tool did not."""
        self.tool_name = self.tool_name or tool_name
        self.call_id = self.call_id or call_id


class ToolNotFound(ToolError):
    """The model called a tool that is not advertised to this run."""

    kind = ErrorKind.NOT_FOUND


class InvalidArguments(ToolError):
    """The arguments are malformed JSON or break the tool's schema.

    Args:
        message: A summary of what was wrong.
        errors: One line per violation, each naming the argument path.
    """

    kind = ErrorKind.INVALID_ARGUMENTS

    def __init__(self, message: str, *, errors: list[str] | None = None) -> None:
        super().__init__(message, details={"errors": list(errors or [])})
        self.errors = list(errors or [])


class ToolExecutionError(ToolError):
    """The tool ran and failed. Retryable or not, as the tool says."""

    kind = ErrorKind.EXECUTION


class ToolTimeout(ToolError):
    """The tool took longer than its policy allows."""

    kind = ErrorKind.TIMEOUT


class NeedsAuthorization(ToolError):
    """The tool needs a (new) OAuth grant of the run's user: the run pauses for it."""

    kind = ErrorKind.UNAUTHORIZED


class Denied(ToolError):
    """A person or a policy refused the call."""

    kind = ErrorKind.DENIED


class Cancelled(ToolError):
    """The call was cancelled before it finished."""

    kind = ErrorKind.CANCELLED


def error_message_for_model(
    call_id: str,
    tool_name: str,
    error: ToolError,
    *,
    available: Sequence[str] = (),
) -> str:
    """What the model reads about a failed call: the call id, what broke, what to do.

    Args:
        call_id: The model's id for the call; providers pair results with calls by it.
        tool_name: The tool the model called.
        error: The classified error.
        available: Tool names to suggest when the tool does not exist.
    """
    head = f"Tool call {call_id} to {tool_name!r}"
    if isinstance(error, InvalidArguments):
        problems = "\n".join(f"- {line}" for line in error.errors) or f"- {error.message}"
        return (
            f"{head} was not run: the arguments are invalid.\n{problems}\n"
            f"Fix the arguments and call {tool_name!r} again."
        )
    if isinstance(error, ToolNotFound):
        hint = f" Available tools: {', '.join(available)}." if available else ""
        return (
            f"{head} was not run: no tool of that name is available.{hint} "
            "Use one of the available tools."
        )
    if isinstance(error, Denied):
        return (
            f"{head} was denied: {error.message}. Do not repeat the same call; "
            "choose another action or ask the user."
        )
    if isinstance(error, NeedsAuthorization):
        return f"{head} needs the user's authorization: {error.message}."
    if isinstance(error, Cancelled):
        return f"{head} was cancelled: {error.message}."
    if isinstance(error, ToolTimeout):
        return f"{head} timed out: {error.message}. Try a smaller request, or call it again later."
    advice = (
        "It may work if you call it again later."
        if error.retryable
        else (
            "Check the arguments or try a different approach; "
            "repeating the same call will fail again."
        )
    )
    return f"{head} failed: {error.message}. {advice}"
