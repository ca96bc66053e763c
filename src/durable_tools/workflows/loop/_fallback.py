"""Fallback models: one model turn tries `AgentConfig.models` in order.

Each model is its own model activity, with its own retry policy (`model_max_attempts`):
the history shows which model was tried, how often, and which answered. A model's
failure moves the turn to the next model only when a retry might have fixed it and the
retries ran out (overload, 5xx, a rate limit, a connection error, a timeout); a rejected
key, an invalid request, a context too long or a cancel end the turn as they always did.
Every turn starts again from the first model, as Pydantic AI's `FallbackModel` does, so a
run goes back to it as soon as it answers again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from temporalio.exceptions import ActivityError, ApplicationError, TimeoutError

from durable_tools._activities._types import ModelTurn
from durable_tools.workflows.run._state import RunState

__all__ = ["ModelsFailed", "falls_over", "send_in_order"]


class ModelsFailed(Exception):
    """Every model tried for a turn failed; `error` is the last one's failure.

    Args:
        error: The last model activity's failure.
        tried: The model specs tried, in order (one when nothing fell over).
    """

    def __init__(self, error: ActivityError, tried: list[str]) -> None:
        super().__init__(str(error))
        self.error = error
        self.tried = tried

    @property
    def note(self) -> str:
        """Words for the run's failure reason naming the models tried before the last."""
        if len(self.tried) < 2:
            return ""
        return f" (fell back from {', '.join(self.tried[:-1])} to {self.tried[-1]})"


def falls_over(error: ActivityError) -> bool:
    """Whether a model activity's failure sends the turn to the next model.

    A retryable failure that reached the activity's last attempt (Temporal then reports
    it as the activity's failure) or a timeout does; a non-retryable one (authentication,
    an invalid request, `ModelContextTooLong`, a missing snapshot) and a cancel do not.
    """
    cause = error.cause
    if isinstance(cause, TimeoutError):
        return True
    return isinstance(cause, ApplicationError) and not cause.non_retryable


def _reason(error: ActivityError) -> tuple[str, dict[str, object]]:
    cause = error.cause
    if isinstance(cause, ApplicationError):
        details = cause.details[0] if cause.details else None
        status = details.get("status") if isinstance(details, dict) else None
        return cause.message, {"error": cause.type or "", "status": status}
    if isinstance(cause, TimeoutError):
        return f"timed out ({cause.type.name if cause.type else 'timeout'})", {"error": "timeout"}
    return str(cause or error), {"error": type(cause).__name__}


async def send_in_order(
    state: RunState, send_to: Callable[[str], Awaitable[ModelTurn]]
) -> ModelTurn:
    """Ask each model of the run in order until one answers; note which did.

    Sets `state.model.answered_by` and records a `model.fallback` event for each model left.

    Raises:
        ModelsFailed: the last model tried failed, or a failure that does not fall over.
    """
    models = state.config.models
    tried: list[str] = []
    for index, spec in enumerate(models):
        tried.append(spec)
        try:
            turn = await send_to(spec)
        except ActivityError as error:
            if index + 1 == len(models) or not falls_over(error):
                raise ModelsFailed(error, tried) from error
            message, details = _reason(error)
            following = models[index + 1]
            state.event(
                "model.fallback",
                detail=f"{spec} failed, trying {following}: {message}"[:500],
                details={"from": spec, "to": following, **details},
            )
            continue
        state.model.answered_by = spec
        return turn
    raise AssertionError("a run has at least one model")  # pragma: no cover
