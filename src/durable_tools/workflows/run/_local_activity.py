"""Local activities that fail the way regular ones do.

A regular activity's failure reaches workflow code as an `ActivityError` whose cause is
what the activity raised. A local activity's does not: the SDK raises the cause itself
(an `ApplicationError`, a `TimeoutError`, a `CancelledError`). Code written for the
first (`except ActivityError`) let a local tool's clean failure, say invalid arguments,
fail the whole run. `execute_local` wraps it, so both kinds fail alike.
"""

from __future__ import annotations

import asyncio
from typing import Any, TypeVar

from temporalio import workflow
from temporalio.exceptions import ActivityError, FailureError

__all__ = ["execute_local", "start_local"]

_T = TypeVar("_T")


async def execute_local(name: str, arg: Any, *, result_type: type[_T], **options: Any) -> _T:
    """`workflow.execute_local_activity`, raising `ActivityError` as a regular one does.

    Raises:
        temporalio.exceptions.ActivityError: the activity failed, timed out or was
            cancelled; its `cause` is what the activity (or the SDK) raised.
    """
    return await start_local(name, arg, result_type=result_type, **options)


def start_local(name: str, arg: Any, *, result_type: type[_T], **options: Any) -> asyncio.Task[_T]:
    """`workflow.start_local_activity`: the activity is scheduled before this returns.

    The task it returns raises `ActivityError` as a regular activity's handle does;
    cancelling it cancels the activity (as `options["cancellation_type"]` says).
    """
    handle = workflow.start_local_activity(name, arg, result_type=result_type, **options)
    task = asyncio.create_task(_as_activity_error(name, handle))

    def pass_cancel_on(done: asyncio.Task[_T]) -> None:
        # Cancelled before its first step, the task never awaited (so never cancelled)
        # the activity, which would run on unseen.
        if done.cancelled():
            handle.cancel()

    task.add_done_callback(pass_cancel_on)
    return task


async def _as_activity_error(name: str, handle: asyncio.Task[_T]) -> _T:
    try:
        return await handle
    except ActivityError:
        raise
    except FailureError as error:
        wrapped = ActivityError(
            f"local activity {name} failed: {error}",
            scheduled_event_id=0,
            started_event_id=0,
            identity="",
            activity_type=name,
            activity_id="",
            retry_state=None,
        )
        raise wrapped from error
