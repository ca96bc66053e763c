"""The model activity's side of per-model rate limits: book a start, wait, settle.

A worker given `model_limits` books each call of a limited model with the model's limiter
workflow (`workflows/limiter`) before calling the provider: one update-with-start round
trip, then a sleep until the booked start. The call's tokens are estimated (input
characters / 4, plus `max_output_tokens` when set) and, once the provider reports its
usage, settled by a signal. A call the limiter cannot book within half of what is left of
the attempt's start-to-close timeout raises a retryable `ModelError` with the wait as its
`retry_after`, as a provider's 429 would: Temporal retries it after the wait, and past
`model_max_attempts` the run falls back to its next model, if it has one.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from temporalio import activity
from temporalio.client import WithStartWorkflowOperation
from temporalio.common import WorkflowIDConflictPolicy

from durable_tools.messages import ModelRequest, Usage
from durable_tools.models._errors import ModelError
from durable_tools.protocol._compaction import estimate_message_tokens, estimate_tool_tokens
from durable_tools.protocol._models import (
    LIMITER_WORKFLOW,
    RESERVE_UPDATE,
    SETTLE_SIGNAL,
    LimiterInput,
    ModelLimits,
    Reservation,
    ReserveRequest,
    SettleRequest,
    limiter_id,
)

__all__ = ["ModelLimiter"]

_log = logging.getLogger(__name__)

# Without a start-to-close timeout (never for the agent's model activity), wait this long.
_DEFAULT_MAX_DELAY = 60.0


class ModelLimiter:
    """Books the calls of a worker's limited models (see the module docstring).

    Args:
        limits: `ModelLimits` by model spec, exactly as runs name the model.
    """

    def __init__(self, limits: Mapping[str, ModelLimits]) -> None:
        self.limits = dict(limits)

    async def admit(self, request: ModelRequest) -> str | None:
        """Wait until the call of `request` may start; its booking's name, or None when
        its model is not limited.

        Raises:
            ModelError: retryable, when no start could be booked within the attempt.
        """
        limits = self.limits.get(request.model)
        if limits is None:
            return None
        info = activity.info()
        call = f"{info.workflow_run_id}/{info.activity_id}/{info.attempt}"
        ask = ReserveRequest(
            limits=limits, tokens=_estimate(request), max_delay=_max_delay(), call=call
        )
        reservation = await self._reserve(request.model, ask)
        if not reservation.booked:
            raise ModelError(
                f"{request.model}: this deployment's rate limit for the model "
                f"({_describe(limits)}) has no free start within {ask.max_delay:.0f} s "
                f"(the next is in about {reservation.delay:.0f} s)",
                retryable=True,
                retry_after=reservation.delay,
            )
        await asyncio.sleep(reservation.delay)
        return call

    async def settle(self, spec: str, call: str, usage: Usage) -> None:
        """Count the call by its real tokens; a failure to tell the limiter is only logged
        (the estimate then stands)."""
        if not usage.total_tokens:
            return  # the provider reported nothing: the estimate stands
        handle = activity.client().get_workflow_handle(limiter_id(activity.info().task_queue, spec))
        try:
            await handle.signal(SETTLE_SIGNAL, SettleRequest(call=call, tokens=usage.total_tokens))
        except Exception as error:  # accounting must not fail an answered call
            _log.warning("model limiter of %s: could not settle a call: %s", spec, error)

    async def _reserve(self, spec: str, ask: ReserveRequest) -> Reservation:
        client = activity.client()
        queue = activity.info().task_queue
        for tries_left in (1, 0):
            start: WithStartWorkflowOperation[Any, None] = WithStartWorkflowOperation(
                LIMITER_WORKFLOW,
                LimiterInput(spec=spec),
                id=limiter_id(queue, spec),
                task_queue=queue,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            )
            try:
                answer: Reservation = await client.execute_update_with_start_workflow(
                    RESERVE_UPDATE, ask, start_workflow_operation=start, result_type=Reservation
                )
                return answer
            except asyncio.CancelledError:
                raise
            except Exception:
                # The limiter may have ended (idle, continue-as-new) as the update came:
                # once more starts or finds its successor.
                if not tries_left:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover


def _estimate(request: ModelRequest) -> int:
    """The call's tokens before it is made: its input, plus its output bound if set."""
    tokens = estimate_message_tokens(request.messages) + estimate_tool_tokens(request.tools)
    if request.settings is not None and request.settings.max_output_tokens:
        tokens += request.settings.max_output_tokens
    return tokens


def _max_delay() -> float:
    """Half of what is left of this attempt's start-to-close timeout (the call gets the
    other half)."""
    info = activity.info()
    if not info.start_to_close_timeout:
        return _DEFAULT_MAX_DELAY
    started = info.started_time
    if started.tzinfo is None:
        started = started.replace(tzinfo=UTC)
    deadline = started + info.start_to_close_timeout
    left = (deadline - datetime.now(UTC)) / timedelta(seconds=1)
    return min(max(0.0, left / 2), 86_400.0)


def _describe(limits: ModelLimits) -> str:
    parts = []
    if limits.requests_per_minute is not None:
        parts.append(f"{limits.requests_per_minute:g} requests")
    if limits.tokens_per_minute is not None:
        parts.append(f"{limits.tokens_per_minute:,} tokens")
    text = " and ".join(parts) + " a minute"
    if limits.window_seconds != 60:
        text += f", counted per {limits.window_seconds:g} s window"
    return text
