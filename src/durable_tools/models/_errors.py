"""The one error every model adapter raises, classified once for Temporal's retries."""

from __future__ import annotations

from datetime import timedelta

from temporalio.exceptions import ApplicationError

__all__ = ["CONTEXT_TOO_LONG", "ModelError"]

CONTEXT_TOO_LONG = "ModelContextTooLong"
"""The error type of a `ModelError` saying the conversation no longer fits the model's
context window: the agent workflow compacts the context once and retries on it (when the
run has `AgentConfig.compaction`), where any other `ModelError` fails the run."""


class ModelError(ApplicationError):
    """A model call failed, and whether trying again may help.

    It is a Temporal `ApplicationError` so that the model activity can let it propagate
    as is: Temporal then skips retries of a non-retryable error and waits `retry_after`
    before the next attempt when the provider asked for it, with no translation layer
    in between that could get the classification wrong.

    Args:
        message: What went wrong, for operators. Never contains an API key.
        retryable: Whether trying the same call again may succeed (rate limits, 5xx,
            connection errors, timeouts).
        retry_after: Seconds the provider asked us to wait before retrying, if it said.
        status: The HTTP status of the provider's answer, when there was one.
        context_exceeded: The provider said the conversation is too long for the model's
            context window; never retryable as it is, the error type is `CONTEXT_TOO_LONG`.
    """

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        retry_after: float | None = None,
        status: int | None = None,
        context_exceeded: bool = False,
    ) -> None:
        retryable = retryable and not context_exceeded
        super().__init__(
            message,
            # Details are recorded in history: only the classification, never request data.
            {"retryable": retryable, "retry_after": retry_after, "status": status},
            type=CONTEXT_TOO_LONG if context_exceeded else "ModelError",
            non_retryable=not retryable,
            next_retry_delay=timedelta(seconds=retry_after) if retry_after is not None else None,
        )
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status
        self.context_exceeded = context_exceeded

    def __repr__(self) -> str:
        return (
            f"ModelError({self.message!r}, retryable={self.retryable}, "
            f"retry_after={self.retry_after}, status={self.status})"
        )
