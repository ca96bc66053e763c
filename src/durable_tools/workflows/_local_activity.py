"""Local activities that fail the way regular ones do.

A regular activity's failure reaches workflow code as an `ActivityError` whose cause is
what the activity raised. A local activity's does not: the SDK raises the cause itself
(an `ApplicationError`, a `TimeoutError`, a `CancelledError`). Code written for the
first (`except ActivityError`) let a local tool's clean failure, say invalid arguments,
fail the whole run. `execute_local` wraps it, so both kinds fail alike.
"""

from __future__ import annotations

from typing import Any, TypeVar

from temporalio import workflow
from temporalio.exceptions import ActivityError, FailureError

__all__ = ["execute_local"]

_T = TypeVar("_T")


async def execute_local(name: str, arg: Any, *, result_type: type[_T], **options: Any) -> _T:
    """`workflow.execute_local_activity`, raising `ActivityError` as a regular one does.

    Raises:
        temporalio.exceptions.ActivityError: the activity failed, timed out or was
            cancelled; its `cause` is what the activity (or the SDK) raised.
    """
    try:
        result: _T = await workflow.execute_local_activity(
            name, arg, result_type=result_type, **options
        )
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
    return result
