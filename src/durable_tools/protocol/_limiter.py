"""The model limiter's wire types and booking rules, as pure functions.

A limiter (`workflows/limiter`) keeps the *window*: entries of calls booked at one start
time, sorted by start. Workers ask for start times by *lease* (`LeaseRequest`): one update
books every call a worker has waiting, so the number of updates follows the number of
workers, not of calls. Unused slots and finished calls' real tokens come back as
`Adjustment`s, with the worker's next lease or by signal. The older per-call `reserve`
update and `settle` signal still work (a worker of the previous build in a rolling
deploy books through them).

The window is bounded by design: it holds at most `MAX_WINDOW_ENTRIES` entries. When a
booking needs a new entry and the window is full, its two oldest entries merge into one at
the later start: merged calls are counted as if they started later than they did, so they
stay in the count longer than needed and no window can hold more than its limits. The
cost is a little precision under extreme load, never a refused booking or a state too
large to carry over continue-as-new.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left
from itertools import accumulate
from typing import Annotated

from pydantic import Field

from durable_tools._wire import WireModel
from durable_tools.protocol._models import MAX_MODEL_SPEC_CHARS, ModelLimits

__all__ = [
    "ADJUST_SIGNAL",
    "LEASE_UPDATE",
    "LIMITER_WORKFLOW",
    "MAX_ADJUSTMENTS",
    "MAX_CARRIED_ENTRIES",
    "MAX_DELAY_SECONDS",
    "MAX_GRACE_SECONDS",
    "MAX_HOLD_SECONDS",
    "MAX_LEASE_CALLS",
    "MAX_WINDOW_ENTRIES",
    "RESERVE_UPDATE",
    "SETTLE_SIGNAL",
    "AdjustRequest",
    "Adjustment",
    "LeaseGrant",
    "LeaseRequest",
    "LimitedCall",
    "LimiterInput",
    "Reservation",
    "ReserveRequest",
    "SettleRequest",
    "Window",
    "carried",
    "limiter_id",
    "limiter_task_queue",
    "slot_grace",
    "slot_hold",
]

LIMITER_WORKFLOW = "durable_tools.ModelLimiter"
"""The workflow type of a model's limiter (`workflows/limiter`)."""
LEASE_UPDATE = "lease"
ADJUST_SIGNAL = "adjust"
RESERVE_UPDATE = "reserve"
"""The per-call booking of the previous build (one update per call)."""
SETTLE_SIGNAL = "settle"
"""The per-call settlement of the previous build."""

MAX_WINDOW_ENTRIES = 2_000
"""Most entries a limiter keeps in its window (see the module docstring: past it, the
oldest merge). At most ~250 bytes each as JSON, so the state carried over continue-as-new
stays near half a megabyte at worst."""
MAX_CARRIED_ENTRIES = 5_000
"""Most entries a limiter's input may carry: above `MAX_WINDOW_ENTRIES`, so that the state
of a limiter of the previous build (which kept up to 5,000) still decodes."""
MAX_LEASE_CALLS = 200
"""Most calls one lease books."""
MAX_ADJUSTMENTS = 1_000
"""Most adjustments one lease or signal carries."""
MAX_DELAY_SECONDS = 86_400.0
"""The longest a call may ask to wait for its start."""
MAX_HOLD_SECONDS = 10.0
"""The most a call of a lease granted with room to spare may wait to start (`slot_hold`)."""
MAX_GRACE_SECONDS = 1.0
"""The most a call may start after its booked start (see `slot_grace`)."""


def slot_grace(limits: ModelLimits) -> float:
    """How late after its booked start a call may still start: a tenth of the window, at
    most `MAX_GRACE_SECONDS`.

    A call starts when the worker has the limiter's answer and its clock reaches the
    start; an answer that comes later than this (a loaded worker or server) is given back
    and the call asks again. So that a call starting anywhere in its grace keeps every
    window within the limits, the limiter counts each booking over the window plus the
    grace: it books up to the limits in any `window_seconds + grace`, which costs at most
    a tenth of the limit's throughput for short windows and under 2% for a minute's.
    """
    return min(MAX_GRACE_SECONDS, limits.window_seconds / 10)


def slot_hold(limits: ModelLimits) -> float:
    """How long the calls of a lease granted while the window has room for all it holds
    and them may wait before starting: a quarter of the window, at most
    `MAX_HOLD_SECONDS`. They are counted as if they started at its end."""
    return min(MAX_HOLD_SECONDS, limits.window_seconds / 4)


def _counted_over(limits: ModelLimits) -> float:
    """The span a booking is counted over: the window and the grace of a late start."""
    return limits.window_seconds + slot_grace(limits)


def limiter_task_queue(task_queue: str) -> str:
    """The task queue of the limiters of `task_queue`'s runs, served by a worker of its own
    (`DurableToolsPlugin.limited_workers`): on the runs' queue, a lease would wait behind
    every run's workflow tasks, which under load is seconds."""
    return f"{task_queue}.model-limiter"


def limiter_id(task_queue: str, spec: str) -> str:
    """The workflow id of the limiter of model `spec` for the runs of `task_queue`."""
    if len(spec) > 200:
        spec = "sha256-" + hashlib.sha256(spec.encode()).hexdigest()
    return f"durable-tools-model-limit/{task_queue}/{spec}"


class LimitedCall(WireModel):
    """An entry of a limiter's window: calls booked to start at one time."""

    start: float = Field(allow_inf_nan=False)
    """When they may start, in seconds since the epoch (the limiter's clock)."""
    tokens: int = Field(default=0, ge=0)
    """Their tokens: estimates until settled."""
    call: str = Field(default="", max_length=200)
    """The booking's name (a call, or a lease), for its adjustments; "" once merged."""
    requests: int = Field(default=1, ge=1)
    """How many calls start then (a lease books many at once)."""


class LimiterInput(WireModel):
    """A limiter's start (and continue-as-new) input."""

    spec: str = Field(max_length=MAX_MODEL_SPEC_CHARS)
    calls: list[LimitedCall] = Field(default_factory=list, max_length=MAX_CARRIED_ENTRIES)


class ReserveRequest(WireModel):
    """One model call asking its limiter for a start time (the previous build's way)."""

    limits: ModelLimits
    tokens: int = Field(default=0, ge=0, le=10**12)
    """The call's estimated tokens."""
    max_delay: float = Field(default=60.0, ge=0, le=MAX_DELAY_SECONDS, allow_inf_nan=False)
    """The longest the call can wait; a later slot is not booked (the call retries)."""
    call: str = Field(default="", max_length=200)
    """Names the reservation, for its settlement (`SettleRequest.call`)."""


class Reservation(WireModel):
    """The limiter's answer to a `ReserveRequest`: start after `delay` seconds, or come
    back after it."""

    booked: bool
    delay: float = 0.0


class SettleRequest(WireModel):
    """A finished call's real tokens, replacing its estimate (the previous build's way)."""

    call: str = Field(max_length=200)
    tokens: int = Field(ge=0, le=10**12)


class Adjustment(WireModel):
    """A change to a lease's entry: slots given back unused, tokens settled."""

    lease: str = Field(min_length=1, max_length=200)
    start: float = Field(allow_inf_nan=False)
    """Where the window keeps the entry (`LeaseGrant.at`, else the start granted)."""
    returned: int = Field(default=0, ge=0, le=MAX_LEASE_CALLS)
    """Slots of the entry not used (a call cancelled or out of time)."""
    tokens: int = Field(default=0, ge=-(10**12), le=10**12)
    """Tokens to add to the entry: a call's real tokens minus its estimate, or minus the
    estimate of a returned slot."""


class AdjustRequest(WireModel):
    """Adjustments sent by signal, when no lease is coming to carry them."""

    adjust: list[Adjustment] = Field(max_length=MAX_ADJUSTMENTS)


class LeaseRequest(WireModel):
    """A worker asking for start times for the calls it has waiting."""

    limits: ModelLimits
    tokens: list[Annotated[int, Field(ge=0, le=10**12)]] = Field(
        min_length=1, max_length=MAX_LEASE_CALLS
    )
    """Each call's estimated tokens, in the order the worker hands out the starts."""
    max_delay: float = Field(ge=0, le=MAX_DELAY_SECONDS, allow_inf_nan=False)
    """The longest any of the calls can wait: later starts are not booked."""
    lease: str = Field(min_length=1, max_length=200)
    """Names the lease's entries, for their adjustments."""
    adjust: list[Adjustment] = Field(default_factory=list, max_length=MAX_ADJUSTMENTS)
    """Adjustments of the worker's earlier leases, applied before booking."""


class LeaseGrant(WireModel):
    """The limiter's answer to a `LeaseRequest`."""

    now: float
    """The limiter's clock when it booked (a start's delay is `start - now`)."""
    starts: list[float] = Field(default_factory=list)
    """The starts booked, for the first calls of the request, in order."""
    wait: float | None = None
    """When not every call was booked: how long the next would have had to wait."""
    grace: float = 0.0
    """How late after its start a call may still start (`slot_grace`, plus `slot_hold`
    for a lease granted with room to spare)."""
    at: float | None = None
    """Where the window keeps the lease's calls, when not at their start (with room to
    spare: at the end of their hold); their adjustments name this."""


class Window:
    """A limiter's window: the entries of calls booked, sorted by start, with an index by
    name (adjustments and settlements cost one lookup each) and running sums (a booking
    costs a binary search, not a walk over the window).

    Args:
        calls: The entries carried over (sorted, bounded, forged starts dropped; see
            `carried`).
    """

    def __init__(self, calls: list[LimitedCall]) -> None:
        self.calls = calls
        self._named: dict[tuple[str, float], LimitedCall] = {}
        self._latest: dict[str, float] = {}
        for call in calls:
            self._index(call)
        self._sums: tuple[list[int], list[int]] | None = None

    def book(self, now: float, request: ReserveRequest) -> Reservation:
        """Book one call at the earliest start that keeps every window within its limits.

        Returns:
            A booked reservation with the delay until the start, or, when that delay would
            pass `request.max_delay`, an unbooked one saying how long the wait would be.
        """
        self._prune(now, _counted_over(request.limits))
        start = self._earliest(now, request.limits, 1, request.tokens)
        delay = start - now
        if delay > request.max_delay:
            return Reservation(booked=False, delay=delay)
        self._append(start, 1, request.tokens, request.call)
        return Reservation(booked=True, delay=delay)

    def grant(self, now: float, request: LeaseRequest) -> LeaseGrant:
        """Book the calls of a lease, each at the earliest start within the limits.

        The request's adjustments are applied first, and calls that can no longer share a
        window with a new one dropped. Starts are handed out in order (first come, first
        served), so the window stays sorted. When every call fits at once, they are one
        entry; otherwise each is booked in turn, and booking stops at the first whose
        start would be later than `request.max_delay` from now. A call whose estimate
        alone passes a window's tokens waits for a window with nothing else in it.
        """
        limits = request.limits
        self.adjust(request.adjust)
        self._prune(now, _counted_over(limits))
        count, total = len(request.tokens), sum(request.tokens)
        most_requests, most_tokens = limits.requests_per_window, limits.tokens_per_window
        before_requests, before_tokens = self._prefix_sums()
        if (most_requests is None or before_requests[-1] + count <= most_requests) and (
            most_tokens is None or before_tokens[-1] + total <= most_tokens
        ):
            # Everything the window holds and these fit one window: they may start any
            # time in the next `hold`, and are counted as if they started at its end, so
            # a slow answer (a loaded worker) does not make them book again.
            hold = slot_hold(limits)
            self._append(now + hold, count, total, request.lease)
            return LeaseGrant(
                now=now, starts=[now] * count, grace=hold + slot_grace(limits), at=now + hold
            )
        starts: list[float] = []
        for tokens in request.tokens:
            start = self._earliest(now, limits, 1, tokens)
            if start - now > request.max_delay:
                return LeaseGrant(
                    now=now, starts=starts, wait=start - now, grace=slot_grace(limits)
                )
            self._append(start, 1, tokens, request.lease)
            starts.append(start)
        return LeaseGrant(now=now, starts=starts, grace=slot_grace(limits))

    def adjust(self, changes: list[Adjustment]) -> None:
        """Apply adjustments to the entries they name; an entry no longer kept (out of the
        window, merged) is left as it is, and an entry with no call left goes."""
        emptied = False
        for change in changes:
            entry = self._named.get((change.lease, change.start))
            if entry is None:
                continue
            entry.requests -= min(change.returned, entry.requests)
            entry.tokens = max(0, entry.tokens + change.tokens)
            emptied = emptied or entry.requests == 0
            self._sums = None
        if emptied:
            for call in self.calls:
                if call.requests == 0:
                    self._unindex(call)
            self.calls[:] = [call for call in self.calls if call.requests > 0]

    def settle(self, request: SettleRequest) -> None:
        """Replace a call's estimate by its real tokens (a call no longer kept: none)."""
        start = self._latest.get(request.call)
        entry = None if start is None else self._named.get((request.call, start))
        if entry is not None:
            entry.tokens = request.tokens
            self._sums = None

    def _index(self, call: LimitedCall) -> None:
        if call.call:
            self._named[(call.call, call.start)] = call
            self._latest[call.call] = call.start

    def _unindex(self, call: LimitedCall) -> None:
        if call.call and self._named.get((call.call, call.start)) is call:
            del self._named[(call.call, call.start)]
            if self._latest.get(call.call) == call.start:
                del self._latest[call.call]

    def _prune(self, now: float, window: float) -> None:
        """Drop the calls no window starting from now can hold."""
        gone = 0
        while gone < len(self.calls) and self.calls[gone].start <= now - window:
            self._unindex(self.calls[gone])
            gone += 1
        if gone:
            del self.calls[:gone]
            self._sums = None

    def _prefix_sums(self) -> tuple[list[int], list[int]]:
        """Requests and tokens of the entries before each one (and of all, last)."""
        if self._sums is None:
            self._sums = (
                [0, *accumulate(call.requests for call in self.calls)],
                [0, *accumulate(call.tokens for call in self.calls)],
            )
        return self._sums

    def _earliest(self, now: float, limits: ModelLimits, requests: int, tokens: int) -> float:
        """The earliest start, at or after now and the last booked one, at which `requests`
        more calls of `tokens` tokens keep every window within the limits."""
        calls = self.calls
        start = max(now, calls[-1].start) if calls else now
        before_requests, before_tokens = self._prefix_sums()
        # The latest entry the new calls cannot share a window with is the last one whose
        # entries from it to the end, with the new calls, pass a limit: the new start must
        # leave it out of the window. The sums before each entry only grow: bisect.
        latest = -1
        most_requests = limits.requests_per_window
        if most_requests is not None:
            over = before_requests[-1] + requests - most_requests
            latest = bisect_left(before_requests, over, hi=len(calls)) - 1
        most_tokens = limits.tokens_per_window
        if most_tokens is not None:
            over = before_tokens[-1] + min(tokens, most_tokens) - most_tokens
            latest = max(latest, bisect_left(before_tokens, over, hi=len(calls)) - 1)
        if latest < 0:
            return start
        return max(start, calls[latest].start + _counted_over(limits))

    def _append(self, start: float, requests: int, tokens: int, name: str) -> None:
        """Add a booking at the end of the window (joining the last entry when it is the
        same booking's, at the same start), making room first when the window is full."""
        calls = self.calls
        if calls and calls[-1].start == start and calls[-1].call == name:
            calls[-1].requests += requests
            calls[-1].tokens += tokens
            if self._sums is not None:
                self._sums[0][-1] += requests
                self._sums[1][-1] += tokens
            return
        while len(calls) >= MAX_WINDOW_ENTRIES:
            self._unindex(calls[0])
            self._unindex(calls[1])
            _merge_oldest(calls)
            if self._sums is not None:  # the sums before the later entries are unchanged
                del self._sums[0][1], self._sums[1][1]
        call = LimitedCall(start=start, tokens=tokens, call=name, requests=requests)
        calls.append(call)
        self._index(call)
        if self._sums is not None:
            self._sums[0].append(self._sums[0][-1] + requests)
            self._sums[1].append(self._sums[1][-1] + tokens)


def carried(calls: list[LimitedCall], now: float) -> list[LimitedCall]:
    """A window as a limiter takes it over: sorted, without starts no booking can have
    made (further ahead than the longest wait and a window: a forged input), bounded."""
    horizon = now + MAX_DELAY_SECONDS + 3_600.0
    window = sorted((call for call in calls if call.start <= horizon), key=lambda c: c.start)
    while len(window) > MAX_WINDOW_ENTRIES:
        _merge_oldest(window)
    return window


def _merge_oldest(calls: list[LimitedCall]) -> None:
    """Make room: the two oldest entries become one at the later start, named by neither
    (counted later than they started: a window then holds fewer calls than counted; their
    settlements are ignored: their estimates stand)."""
    first, second = calls[0], calls[1]
    calls[1] = LimitedCall(
        start=second.start,
        tokens=first.tokens + second.tokens,
        requests=first.requests + second.requests,
    )
    del calls[0]
