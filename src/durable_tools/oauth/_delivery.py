"""Telling a run how its authorization ended, without losing it while Temporal is down.

The callback has already stored the grant (or learned of the refusal) when it tells the run;
if Temporal does not answer then, the outcome must not be dropped: the run would wait
forever, and the link, its state consumed, would only say "already used". So an outcome that
could not be delivered goes back into the state store under its `state`, as the pending
record's `outcome`, where two things pick it up:

- a background task retries with exponential backoff for `NotifyRetry.give_up_after`;
- a reload of the callback link retries at once (a person sees the result);
- a restarted callback server resumes the background retries (`resume()`).

Each attempt takes the record from the store first (the store's atomic `take`), so of the
background task and a reload exactly one delivers, and a signal is sent once. The record
stays in the store for `NotifyRetry.keep_for` in case both come too early.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from ._records import AuthorizationFailure, CompletedAuthorization, PendingAuthorization
from ._state import StateStore, UndeliveredOutcomes

__all__ = ["NotifyRetry", "OnComplete", "OnError", "Outcome", "OutcomeDelivery"]

logger = logging.getLogger("durable_tools.oauth")

Outcome = CompletedAuthorization | AuthorizationFailure
"""How an authorization ended."""
OnComplete = Callable[[CompletedAuthorization], Awaitable[None] | None]
"""Called after a grant is stored; may be async. Typically signals the run."""
OnError = Callable[[AuthorizationFailure], Awaitable[None] | None]
"""Called when an authorization of a known run fails; may be async."""


@dataclass(frozen=True)
class NotifyRetry:
    """How the callback keeps trying to tell a run while Temporal is unreachable."""

    first_delay: float = 1.0
    """Seconds before the first retry; doubled after each failure."""
    max_delay: float = 30.0
    """Longest pause between two retries."""
    give_up_after: float = 3600.0
    """Seconds after which the background retries stop (a reload of the link still works)."""
    keep_for: float = 7 * 24 * 3600.0
    """Seconds an undelivered outcome stays in the state store, for a reload."""


class OutcomeDelivery:
    """Delivers outcomes through the hooks; keeps and retries the ones that fail.

    Args:
        states: The state store the pending authorizations come from.
        on_complete: Told of each grant.
        on_error: Told of each failure; None drops failures (nobody to tell).
        retry: Backoff and bounds of the retries.
    """

    def __init__(
        self,
        states: StateStore,
        on_complete: OnComplete,
        on_error: OnError | None,
        retry: NotifyRetry,
    ) -> None:
        self.states = states
        self.on_complete = on_complete
        self.on_error = on_error
        self.retry = retry
        self._retries: dict[str, asyncio.Task[None]] = {}
        self._in_flight: dict[str, tuple[PendingAuthorization, asyncio.Future[bool]]] = {}

    async def deliver(self, pending: PendingAuthorization, outcome: Outcome) -> bool:
        """Tell the run; on failure keep the outcome under the state and retry later.

        `pending` must have been taken from the store (it is put back on failure).

        Returns:
            True if the run was told now.
        """
        now = datetime.now(UTC)
        record = pending.model_copy(
            update={
                "outcome": outcome,
                "expires_at": max(pending.expires_at, now + timedelta(seconds=self.retry.keep_for)),
            }
        )
        return await self.redeliver(record)

    async def redeliver(self, record: PendingAuthorization) -> bool:
        """Retry telling the run of a taken record that holds an outcome."""
        assert record.outcome is not None
        done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._in_flight[record.state] = (record, done)
        delivered = False
        try:
            delivered = await self._notify(record.outcome)
            if not delivered:
                await self.states.put(record)  # un-consumed: a reload can retry it
                self._schedule(record.state)
        finally:
            del self._in_flight[record.state]
            done.set_result(delivered)
        return delivered

    def in_flight(self, state: str) -> tuple[PendingAuthorization, asyncio.Future[bool]] | None:
        """The record and the attempt running for `state` right now (the record is then
        out of the store); the future says whether the run was told."""
        return self._in_flight.get(state)

    async def resume(self) -> int:
        """Retry, in the background, every outcome the store holds undelivered (those a
        previous process could not deliver); returns how many."""
        if not isinstance(self.states, UndeliveredOutcomes):
            return 0
        states = await self.states.undelivered()
        for state in states:
            self._schedule(state)
        if states:
            logger.info("resuming %d undelivered authorization outcome(s)", len(states))
        return len(states)

    async def aclose(self) -> None:
        """Stop the background retries (undelivered outcomes stay in the store)."""
        tasks, self._retries = list(self._retries.values()), {}
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _notify(self, outcome: Outcome) -> bool:
        if isinstance(outcome, CompletedAuthorization):
            hook: Callable[[object], Awaitable[None] | None] = self.on_complete  # type: ignore[assignment]
        elif self.on_error is not None:
            hook = self.on_error  # type: ignore[assignment]
        else:
            return True  # nobody to tell
        try:
            result = hook(outcome)
            if inspect.isawaitable(result):
                await result
        except Exception as error:
            # The message may quote the server; the type and the ids say enough.
            logger.warning(
                "could not tell run %s/%s how its authorization ended (%s): will retry",
                outcome.workflow_id,
                outcome.call_id,
                type(error).__name__,
            )
            return False
        return True

    def _schedule(self, state: str) -> None:
        running = self._retries.get(state)
        if running is None or running.done():
            self._retries[state] = asyncio.create_task(self._retry(state))

    async def _retry(self, state: str) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.retry.give_up_after
        delay = self.retry.first_delay
        while True:
            await asyncio.sleep(max(0.0, min(delay, deadline - loop.time())))
            record = await self.states.take(state)
            if record is None or record.outcome is None:
                # A reload delivered it, or is delivering it (and reschedules if that fails).
                if record is not None:
                    await self.states.put(record)
                self._retries.pop(state, None)
                return
            if await self.redeliver(record):  # puts the record back if it fails
                self._retries.pop(state, None)
                return
            if loop.time() >= deadline:
                logger.error(
                    "gave up telling run %s/%s how its authorization ended after %.0f s; "
                    "a reload of the authorization link tries again",
                    record.outcome.workflow_id,
                    record.outcome.call_id,
                    self.retry.give_up_after,
                )
                self._retries.pop(state, None)
                return
            delay = min(delay * 2, self.retry.max_delay)
