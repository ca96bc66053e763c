"""The workflow that books model calls' start times: `durable-tools-model-limit/<queue>/<model>`.

The model activity of a limited model asks it, by update-with-start, when its call may
start (`protocol._models.book`): the workflow's state is the window of calls booked,
changed by one update at a time, so the bound holds whatever the number of workers and
runs. The answer is a delay, which the activity sleeps before calling the provider; a call
that would wait longer than its attempt allows is not booked and retries later, as after a
provider's 429. After the call, a signal replaces the call's estimated tokens by its
usage.

Its history grows by a few events per call, so it continues as new after
`CONTINUE_AFTER_EVENTS` events (or when the server suggests it) carrying the calls still
in the window; it ends after `IDLE_SECONDS` without a call (the next call starts it
again). Under worker versioning it continues as new onto the current build as soon as
one is set: a limiter pinned to a retired build would hold every limited call of the
deployment. (It declares no versioning behaviour: on server 1.32 a workflow type that
declares one cannot complete a task on an unversioned worker.)
"""

# No `from __future__ import annotations`: the sandbox re-imports this module per run.

from typing import Any

from pydantic import ValidationError
from temporalio import workflow
from temporalio.workflow import ContinueAsNewVersioningBehavior

with workflow.unsafe.imports_passed_through():
    from durable_tools.protocol._models import (
        LIMITER_WORKFLOW,
        RESERVE_UPDATE,
        SETTLE_SIGNAL,
        LimiterInput,
        Reservation,
        ReserveRequest,
        SettleRequest,
        book,
        settle,
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
        self._calls = list(input.calls)
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
                LimiterInput(spec=self._spec, calls=self._calls),
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

    @workflow.update(name=RESERVE_UPDATE)
    def reserve(self, request: Any) -> Reservation:
        """Book the earliest start within the limits, or say how long the wait would be."""
        self._asked += 1
        checked = ReserveRequest.model_validate(request)
        return book(self._calls, workflow.now().timestamp(), checked)

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
        settle(self._calls, checked)
