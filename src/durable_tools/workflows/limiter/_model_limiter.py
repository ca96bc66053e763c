"""The workflow that books model calls' start times: `durable-tools-model-limit/<queue>/<model>`.

Each worker's model activities ask it for starts through one leaser per worker process
(`_activities/_model_limits.py`): one `lease` update, by update-with-start, books every
call that worker has waiting (`protocol._limiter.grant`), so the updates in flight follow
the number of workers, never the number of calls (Temporal takes at most 10 at once). The
workflow's state is the window of calls booked, changed by one update at a time, so the
limits hold whatever the number of workers and runs. The answer is a start per call, which
the activity sleeps until before calling the provider; a call that would wait longer than
its attempt allows is not booked and retries later, as after a provider's 429. Slots a
worker could not use and finished calls' real tokens come back as adjustments, with the
worker's next lease or by the `adjust` signal. The per-call `reserve` update and `settle`
signal of the previous build still work.

Its state is bounded by design (`MAX_WINDOW_ENTRIES`, oldest entries merge), never by a
validator: the continue-as-new input it builds always decodes. Its history grows by a few
events per lease, so it continues as new after `CONTINUE_AFTER_EVENTS` events (or when the
server suggests it) carrying the calls still in the window; it ends after `IDLE_SECONDS`
without a call (the next call starts it again). Under worker versioning it continues as
new onto the current build as soon as one is set: a limiter pinned to a retired build
would hold every limited call of the deployment. (It declares no versioning behaviour: on
server 1.32 a workflow type that declares one cannot complete a task on an unversioned
worker.)
"""

# No `from __future__ import annotations`: the sandbox re-imports this module per run.

from typing import Any

from pydantic import ValidationError
from temporalio import workflow
from temporalio.workflow import ContinueAsNewVersioningBehavior

with workflow.unsafe.imports_passed_through():
    from durable_tools.protocol._limiter import (
        ADJUST_SIGNAL,
        LEASE_UPDATE,
        LIMITER_WORKFLOW,
        RESERVE_UPDATE,
        SETTLE_SIGNAL,
        AdjustRequest,
        LeaseGrant,
        LeaseRequest,
        LimiterInput,
        Reservation,
        ReserveRequest,
        SettleRequest,
        Window,
        carried,
    )

__all__ = ["CONTINUE_AFTER_EVENTS", "IDLE_SECONDS", "ModelLimiterWorkflow"]

CONTINUE_AFTER_EVENTS = 2_000
"""History length after which the limiter continues as new."""
IDLE_SECONDS = 3_600.0
"""A limiter nobody asked for this long, with no call left in its window, ends."""


@workflow.defn(name=LIMITER_WORKFLOW)
class ModelLimiterWorkflow:
    """Books start times for the calls of one model spec (see the module docstring)."""

    @workflow.init
    def __init__(self, input: LimiterInput) -> None:
        self._spec = input.spec
        self._window = Window(carried(input.calls, workflow.now().timestamp()))
        self._asked = 0

    @workflow.run
    async def run(self, input: LimiterInput) -> None:
        while not self._too_long():
            before = self._asked
            try:
                await workflow.wait_condition(self._too_long, timeout=IDLE_SECONDS)
            except TimeoutError:
                if self._asked == before:
                    break  # idle: the next call starts a new limiter
        await workflow.wait_condition(workflow.all_handlers_finished)
        if self._too_long():
            workflow.continue_as_new(
                LimiterInput(spec=self._spec, calls=self._window.calls),
                # The new run's first task goes to the current build (unversioned: no effect).
                initial_versioning_behavior=ContinueAsNewVersioningBehavior.AUTO_UPGRADE,
            )

    def _too_long(self) -> bool:
        info = workflow.info()
        return (
            info.get_current_history_length() >= CONTINUE_AFTER_EVENTS
            or info.is_continue_as_new_suggested()
            or info.is_target_worker_deployment_version_changed()
        )

    @workflow.update(name=LEASE_UPDATE)
    def lease(self, request: Any) -> LeaseGrant:
        """Book the earliest starts within the limits for a worker's waiting calls."""
        self._asked += 1
        checked = LeaseRequest.model_validate(request)
        return self._window.grant(workflow.now().timestamp(), checked)

    @lease.validator
    def _check_lease(self, request: Any) -> None:
        LeaseRequest.model_validate(request)  # a ValidationError rejects the update

    @workflow.signal(name=ADJUST_SIGNAL)
    def adjust(self, request: Any) -> None:
        """Give back unused slots, settle tokens; a malformed signal is dropped."""
        self._asked += 1
        try:
            checked = AdjustRequest.model_validate(request)
        except ValidationError:
            workflow.logger.warning("model limiter: dropped a malformed adjust signal")
            return
        self._window.adjust(checked.adjust)

    @workflow.update(name=RESERVE_UPDATE)
    def reserve(self, request: Any) -> Reservation:
        """Book one call (the previous build's way), or say how long the wait would be."""
        self._asked += 1
        checked = ReserveRequest.model_validate(request)
        return self._window.book(workflow.now().timestamp(), checked)

    @reserve.validator
    def _check_reserve(self, request: Any) -> None:
        ReserveRequest.model_validate(request)  # a ValidationError rejects the update

    @workflow.signal(name=SETTLE_SIGNAL)
    def settle(self, request: Any) -> None:
        """Replace a finished call's estimate by its tokens; a malformed one is dropped."""
        try:
            checked = SettleRequest.model_validate(request)
        except ValidationError:
            workflow.logger.warning("model limiter: dropped a malformed settle signal")
            return
        self._window.settle(checked)
