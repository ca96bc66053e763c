"""The one error every model adapter raises, classified once for Temporal's retries."""

from __future__ import annotations

from datetime import timedelta

from temporalio.exceptions import ApplicationError

__all__ = ["ModelError"]


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
    """

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        retry_after: float | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(
            message,
            # Details are recorded in history: only the classification, never request data.
            {"retryable": retryable, "retry_after": retry_after, "status": status},
            type="ModelError",
            non_retryable=not retryable,
            next_retry_delay=timedelta(seconds=retry_after) if retry_after is not None else None,
        )
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status

    def __repr__(self) -> str:
        return (
            f"ModelError({self.message!r}, retryable={self.retryable}, "
            f"retry_after={self.retry_after}, status={self.status})"
        )
