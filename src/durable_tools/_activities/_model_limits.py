"""The model activity's side of per-model rate limits: lease a start, wait, settle.

A worker given `model_limits` books each call of a limited model with the model's limiter
workflow (`workflows/limiter`) before calling the provider. Calls do not book one by one:
one *leaser* per model spec and task queue in the worker process gathers the calls waiting
and books them all with one `lease` update (update-with-start), at most one in flight per
leaser; calls that arrive meanwhile go with the next. So a worker sends a few updates a
second whatever its load, and the limiter (which takes at most 10 updates in flight) is
never what a run waits on. Each call then sleeps until its start, calls the provider, and
hands its real tokens back to the leaser, which settles them with its next lease (or, when
none is coming, by one signal for all of them).

A booking that cannot be made never fails a run by itself: a lease the server refuses
(an update over Temporal's limits, aborted by the limiter's continue-as-new, its worker
not reached) is retried with backoff while the calls' time allows. A call the limiter
cannot book within half of what is left of the attempt's start-to-close timeout raises a
retryable `ModelError` with the wait as its `retry_after`, as a provider's 429 would:
Temporal retries it after the wait, and past `model_max_attempts` the run falls back to
its next model, if it has one.

The leasers are state of the worker process (the activity's side), never of workflow code.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
import uuid
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from temporalio import activity
from temporalio.client import Client, WithStartWorkflowOperation
from temporalio.common import WorkflowIDConflictPolicy

from durable_tools.messages import ModelRequest, Usage
from durable_tools.models._errors import ModelError
from durable_tools.protocol._compaction import estimate_message_tokens, estimate_tool_tokens
from durable_tools.protocol._limiter import (
    ADJUST_SIGNAL,
    LEASE_UPDATE,
    LIMITER_WORKFLOW,
    MAX_ADJUSTMENTS,
    MAX_DELAY_SECONDS,
    MAX_LEASE_CALLS,
    Adjustment,
    AdjustRequest,
    LeaseGrant,
    LeaseRequest,
    LimiterInput,
    limiter_id,
    limiter_task_queue,
)
from durable_tools.protocol._models import ModelLimits

__all__ = ["ModelLimiter", "Slot"]

_log = logging.getLogger(__name__)

# Without a start-to-close timeout (never for the agent's model activity), wait this long.
_DEFAULT_MAX_DELAY = 60.0
# Adjustments wait this long for a lease to carry them before going by signal.
_FLUSH_SECONDS = 0.5
# Backoff between refused leases: from the first to the most, with jitter.
_FIRST_BACKOFF = 0.05
_MOST_BACKOFF = 2.0
# A lease not answered after this is asked again (its calls' time permitting).
_LEASE_TIMEOUT = 30.0
# A signal of adjustments gives up after this (its worker may be shutting down).
_SIGNAL_TIMEOUT = timedelta(seconds=10)
# Adjustments kept while the limiter cannot be told (the oldest go first: they only make
# the count more precise, and a lost one leaves it higher, never lower).
_MOST_PENDING_ADJUSTMENTS = 10 * MAX_ADJUSTMENTS


@dataclass(frozen=True)
class Slot:
    """A call's booked start: which lease entry it is in, and its estimated tokens."""

    spec: str
    lease: str
    start: float
    tokens: int
    entry: float
    """Where the limiter's window keeps it (its adjustments name this)."""


@dataclass
class _Waiter:
    """A call waiting for its start: the leaser resolves `booked` with the slot and how
    late after its start it may still start, or with the error that ends the wait."""

    tokens: int
    deadline: float
    booked: asyncio.Future[tuple[Slot, float]]


class ModelLimiter:
    """Books the calls of a worker's limited models (see the module docstring).

    Args:
        limits: `ModelLimits` by model spec, exactly as runs name the model.
    """

    def __init__(self, limits: Mapping[str, ModelLimits]) -> None:
        self.limits = dict(limits)
        self.own_queue = False
        """Start limiters on their own task queue (`limiter_task_queue`): set when this
        worker also runs a worker of that queue (`DurableToolsPlugin.limited_workers`);
        otherwise they run on the runs' queue. A running limiter is found either way."""
        self._leasers: dict[tuple[str, str], _Leaser] = {}

    async def admit(self, request: ModelRequest) -> Slot | None:
        """Wait until the call of `request` may start; its slot, or None when its model is
        not limited.

        Raises:
            ModelError: retryable, when no start could be booked within the attempt.
        """
        limits = self.limits.get(request.model)
        if limits is None:
            return None
        queue = activity.info().task_queue
        leaser = self._leasers.get((queue, request.model))
        if leaser is None:
            home = limiter_task_queue(queue) if self.own_queue else queue
            leaser = _Leaser(activity.client(), queue, home, request.model, limits)
            self._leasers[(queue, request.model)] = leaser
        return await leaser.admit(_estimate(request), _max_delay())

    async def settle(self, spec: str, slot: Slot, usage: Usage) -> None:
        """Count the call by its real tokens (sent with the next lease, or by signal); a
        provider that reported none leaves the estimate standing."""
        leaser = self._leasers.get((activity.info().task_queue, spec))
        if leaser is not None and usage.total_tokens:
            leaser.settle(slot, usage.total_tokens)


class _Leaser:
    """Books the calls of one model spec on one task queue for this worker process."""

    def __init__(
        self, client: Client, queue: str, home: str, spec: str, limits: ModelLimits
    ) -> None:
        self.client = client
        self.queue = queue
        self.home = home
        self.spec = spec
        self.limits = limits
        self._id = limiter_id(queue, spec)
        self._name = uuid.uuid4().hex[:16]
        self._leases = 0
        self._waiting: deque[_Waiter] = deque()
        self._pending: dict[tuple[str, float], Adjustment] = {}
        self._wake = asyncio.Event()
        self._pump: asyncio.Task[None] | None = None

    async def admit(self, tokens: int, max_delay: float) -> Slot:
        """Wait for a booked start, then until it comes (by the wall clock, which the
        limiter's clock is: the server's). A start missed by more than its grace (a
        loaded worker) is given back and booked again."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max_delay
        while True:
            waiter = _Waiter(tokens, deadline, loop.create_future())
            self._waiting.append(waiter)
            self._kick()
            try:
                slot, grace = await waiter.booked
            except asyncio.CancelledError:
                booked = waiter.booked
                if booked.done() and not booked.cancelled() and booked.exception() is None:
                    self.give_back(booked.result()[0])  # booked as the call was cancelled
                raise
            try:
                await asyncio.sleep(max(0.0, slot.start - time.time()))
            except asyncio.CancelledError:
                self.give_back(slot)  # cancelled before its start: the call never went out
                raise
            if time.time() <= slot.start + grace:
                return slot
            self.give_back(slot)

    def give_back(self, slot: Slot) -> None:
        """Return a slot no call will use, so that the window counts it no longer."""
        self._add(Adjustment(lease=slot.lease, start=slot.entry, returned=1, tokens=-slot.tokens))

    def settle(self, slot: Slot, tokens: int) -> None:
        """Replace a used slot's estimate by the call's real tokens."""
        delta = max(-(10**12), min(tokens - slot.tokens, 10**12))
        if delta:
            self._add(Adjustment(lease=slot.lease, start=slot.entry, tokens=delta))

    def _add(self, change: Adjustment) -> None:
        key = (change.lease, change.start)
        known = self._pending.get(key)
        if known is not None:
            change = known.model_copy(
                update={
                    "returned": known.returned + change.returned,
                    "tokens": max(-(10**12), min(known.tokens + change.tokens, 10**12)),
                }
            )
        self._pending[key] = change
        while len(self._pending) > _MOST_PENDING_ADJUSTMENTS:
            del self._pending[next(iter(self._pending))]
        self._kick()

    def _kick(self) -> None:
        self._wake.set()
        if self._pump is None or self._pump.done():
            self._pump = asyncio.get_running_loop().create_task(self._run())

    def _take_adjustments(self) -> list[Adjustment]:
        taken = []
        for key in list(self._pending)[:MAX_ADJUSTMENTS]:
            taken.append(self._pending.pop(key))
        return taken

    def _keep_after_failure(self, changes: list[Adjustment]) -> None:
        """Put back what a failed request carried, as far as it is safe to send again:
        the request may have reached the limiter, and a slot returned twice or tokens
        taken away twice would let a window hold more than its limits. Those are dropped
        (the window then counts a little more than it holds); tokens added are kept."""
        for change in changes:
            if change.returned == 0 and change.tokens > 0:
                self._add(change)

    async def _run(self) -> None:
        """Lease for the calls waiting, one lease at a time, until nothing is left."""
        backoff = 0.0
        while self._waiting or self._pending:
            self._wake.clear()
            if not self._waiting:
                # Only adjustments: give a lease a moment to carry them, then signal.
                # `asyncio.timeout`, not `wait_for`: on Python 3.11 `wait_for` swallows a
                # cancellation that arrives with its result, and this loop would go on.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(_FLUSH_SECONDS):
                        await self._wake.wait()
                if not self._waiting and self._pending:
                    await self._signal(self._take_adjustments())
                continue
            batch = self._take_waiters()
            if not batch:
                continue
            changes = self._take_adjustments()
            left = max(w.deadline for w in batch) - asyncio.get_running_loop().time()
            try:
                # Bounded: a limiter whose task does not run must not hold calls past
                # their time (a lease answered after this still counts its slots: safe).
                # (`asyncio.timeout`: see the wait above.)
                async with asyncio.timeout(min(max(left, 1.0), _LEASE_TIMEOUT)):
                    lease, answer = await self._lease(batch, changes)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                self._waiting.extendleft(reversed(batch))
                self._keep_after_failure(changes)
                self._expire(error)
                backoff = min(max(2 * backoff, _FIRST_BACKOFF), _MOST_BACKOFF)
                _log.info(
                    "model limiter of %s: lease refused (%s); again in %.2f s",
                    self.spec,
                    error,
                    backoff,
                )
                await asyncio.sleep(backoff * random.uniform(0.5, 1.0))
                continue
            backoff = 0.0
            self._hand_out(batch, lease, answer)

    def _take_waiters(self) -> list[_Waiter]:
        """The next calls to lease for (those given up meanwhile left out), the ones
        with the least time first: they get the earliest starts."""
        batch: list[_Waiter] = []
        while self._waiting and len(batch) < MAX_LEASE_CALLS:
            waiter = self._waiting.popleft()
            if not waiter.booked.done():
                batch.append(waiter)
        batch.sort(key=lambda waiter: waiter.deadline)
        return batch

    async def _lease(
        self, batch: list[_Waiter], changes: list[Adjustment]
    ) -> tuple[str, LeaseGrant]:
        self._leases += 1
        now = asyncio.get_running_loop().time()
        request = LeaseRequest(
            limits=self.limits,
            tokens=[waiter.tokens for waiter in batch],
            max_delay=min(max(0.0, max(w.deadline for w in batch) - now), MAX_DELAY_SECONDS),
            lease=f"{self._name}-{self._leases}",
            adjust=changes,
        )
        start: WithStartWorkflowOperation[Any, None] = WithStartWorkflowOperation(
            LIMITER_WORKFLOW,
            LimiterInput(spec=self.spec),
            id=self._id,
            task_queue=self.home,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        )
        grant: LeaseGrant = await self.client.execute_update_with_start_workflow(
            LEASE_UPDATE, request, start_workflow_operation=start, result_type=LeaseGrant
        )
        return request.lease, grant

    def _hand_out(self, batch: list[_Waiter], lease: str, grant: LeaseGrant) -> None:
        """Give each call its start; a call the grant has no start for in its time fails
        as after a provider's 429, and its slot, if any, goes back. A start already past
        its grace when the answer comes (a slow reply) is given back and the call waits
        for the next lease."""
        loop_now = asyncio.get_running_loop().time()
        now = time.time()
        late: list[_Waiter] = []
        for index, waiter in enumerate(batch):
            if index >= len(grant.starts):
                self._refuse(waiter, grant.wait or 0.0)
                continue
            start = grant.starts[index]
            slot = Slot(
                spec=self.spec,
                lease=lease,
                start=start,
                tokens=waiter.tokens,
                entry=start if grant.at is None else grant.at,
            )
            if waiter.booked.done():
                self.give_back(slot)
            elif now > start + grant.grace:
                self.give_back(slot)
                if loop_now < waiter.deadline:
                    late.append(waiter)
                else:
                    self._refuse(waiter, 0.0)
            elif loop_now + (start - now) > waiter.deadline:
                self.give_back(slot)
                self._refuse(waiter, start - grant.now)
            else:
                waiter.booked.set_result((slot, grant.grace))
        self._waiting.extendleft(reversed(late))

    def _refuse(self, waiter: _Waiter, wait: float) -> None:
        if waiter.booked.done():
            return
        budget = max(0.0, waiter.deadline - asyncio.get_running_loop().time())
        waiter.booked.set_exception(
            ModelError(
                f"{self.spec}: this deployment's rate limit for the model "
                f"({_describe(self.limits)}) has no free start within {budget:.0f} s "
                f"(the next is in about {wait:.0f} s)",
                retryable=True,
                retry_after=wait,
            )
        )

    def _expire(self, error: Exception) -> None:
        """Fail the calls whose time ran out while the limiter could not be reached."""
        now = asyncio.get_running_loop().time()
        for waiter in [w for w in self._waiting if w.deadline <= now]:
            self._waiting.remove(waiter)
            if not waiter.booked.done():
                waiter.booked.set_exception(
                    ModelError(
                        f"{self.spec}: the model's rate limiter could not be reached in "
                        f"time: {type(error).__name__}: {str(error)[:300]}",
                        retryable=True,
                    )
                )

    async def _signal(self, changes: list[Adjustment]) -> None:
        try:
            handle = self.client.get_workflow_handle(self._id)
            await handle.signal(
                ADJUST_SIGNAL, AdjustRequest(adjust=changes), rpc_timeout=_SIGNAL_TIMEOUT
            )
        except asyncio.CancelledError:
            raise
        except Exception as error:  # accounting must not fail an answered call
            # Dropped: the estimates stand (a limiter that ended has no window to correct).
            _log.warning("model limiter of %s: could not settle calls: %s", self.spec, error)


def _estimate(request: ModelRequest) -> int:
    """The call's tokens before it is made: its input, plus its output bound if set."""
    tokens = estimate_message_tokens(request.messages) + estimate_tool_tokens(request.tools)
    if request.settings is not None and request.settings.max_output_tokens:
        tokens += request.settings.max_output_tokens
    return min(tokens, 10**12)


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
    return min(max(0.0, left / 2), MAX_DELAY_SECONDS)


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
