"""Scheduling a tool's activity and deciding a workflow-driven retry.

Shared by an agent's tool calls (`_execute`) and a flow's nodes (`workflows.flow._node`): both
schedule the tool's own activity type with its options, count attempts as the activity
reports them, and retry from the workflow on clean, retryable errors.

A tool's `schedule_to_close_timeout` bounds the whole call, however its attempts are
made. Temporal enforces it across the retries it makes itself; the workflow's own retries
are separate activities, so the caller takes an `attempts_deadline` before the first one
and passes it to every attempt (which gets only what is left of the budget as its own
schedule-to-close timeout), to `workflow_retry_delay` (which plans no retry past the
deadline) and to `retry_when_due` (which waits for the retry and checks the deadline
again: a timer may fire late).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ApplicationError

from durable_tools._activities._types import ToolInvocation
from durable_tools.protocol._options import ToolActivityOptions, retry_delay
from durable_tools.tools._results import ToolOutcome
from durable_tools.tools._spec import ToolSpec
from durable_tools.workflows.run._local_activity import start_local

__all__ = [
    "RETRY_BUDGET_PATCH",
    "attempts_after",
    "attempts_deadline",
    "retry_when_due",
    "schedule_tool_activity",
    "start_tool_activity",
    "workflow_retry_delay",
]

RETRY_BUDGET_PATCH = "workflow-retry-budget"
"""Marks runs whose workflow-driven retries stop at the call's schedule-to-close budget. A
run recorded before retried past it (each attempt had a budget of its own), and its
replay must do the same. Asked only when a retry would start after the deadline."""

_LEAST_TIMEOUT = timedelta(milliseconds=1)
"""Temporal takes a timeout of zero as "none": an attempt never gets less than this."""


def attempts_deadline(options: ToolActivityOptions) -> float | None:
    """When the call's workflow-driven attempts must have ended (`workflow.time()`), or
    None when the workflow does not retry the tool or it has no schedule-to-close budget.

    Take it once, before the call's first attempt (and again after a pause that is not
    the tool's, such as waiting for the user's answers to an MCP server's questions).
    """
    if not options.workflow_retries or options.schedule_to_close_timeout is None:
        return None
    return workflow.time() + options.schedule_to_close_timeout.total_seconds()


async def schedule_tool_activity(
    name: str,
    invocation: ToolInvocation,
    options: ToolActivityOptions,
    summary: str | None,
    *,
    deadline: float | None = None,
) -> ToolOutcome:
    """Run the tool's activity (local or regular, as its options say) and return its outcome.

    Raises:
        temporalio.exceptions.ActivityError: the activity failed, timed out or was cancelled.
    """
    return await start_tool_activity(name, invocation, options, summary, deadline=deadline)


def start_tool_activity(
    name: str,
    invocation: ToolInvocation,
    options: ToolActivityOptions,
    summary: str | None,
    *,
    deadline: float | None = None,
) -> asyncio.Task[ToolOutcome]:
    """Schedule the tool's activity now and return the task that ends with its outcome.

    The command is issued before this returns, as `await schedule_tool_activity(...)`
    issues it before its first suspension: a run's commands keep their order whichever
    is used. Cancelling the task cancels the activity; the task raises `ActivityError`
    when the activity failed, timed out or was cancelled.

    Args:
        name: The tool's activity type.
        invocation: The activity's input.
        options: The tool's activity options.
        summary: The activity's summary, for the UI.
        deadline: The call's `attempts_deadline`: this attempt's schedule-to-close timeout
            is what is left of the budget.
    """
    schedule_to_close = options.schedule_to_close_timeout
    if deadline is not None:
        schedule_to_close = max(timedelta(seconds=deadline - workflow.time()), _LEAST_TIMEOUT)
    shared: dict[str, Any] = {
        "start_to_close_timeout": options.start_to_close_timeout,
        "schedule_to_close_timeout": schedule_to_close,
        "retry_policy": options.retry_policy,
        "cancellation_type": options.cancellation_type,
        "summary": summary,
    }
    if options.local:  # no task queue or heartbeats: it runs in the workflow's worker
        return start_local(name, invocation, result_type=ToolOutcome, **shared)
    return workflow.start_activity(
        name,
        invocation,
        result_type=ToolOutcome,
        task_queue=options.task_queue,
        heartbeat_timeout=options.heartbeat_timeout,
        **shared,
    )


def attempts_after(cause: BaseException | None, so_far: int) -> int:
    """Attempts made in all once this failure (the activity error's cause) is counted.

    The tool activity reports its attempt number (counting the workflow's own earlier
    retries) as the failure's second detail, so retries made by Temporal itself are
    counted too; a failure without it (a timeout, an older worker) counts as one attempt.
    """
    if isinstance(cause, ApplicationError) and len(cause.details) > 1:
        reported = cause.details[1]
        if isinstance(reported, int) and not isinstance(reported, bool):
            return max(so_far + 1, reported)
    return so_far + 1


def workflow_retry_delay(
    spec: ToolSpec,
    options: ToolActivityOptions,
    cause: BaseException | None,
    attempts: int,
    *,
    deadline: float | None = None,
) -> float | None:
    """Seconds to wait before the workflow retries the call, or None when it does not.

    Only clean, retryable tool errors are retried from the workflow (a tool not safe to
    repeat after a timeout is not), within the tool's `maximum_attempts` and before the
    call's `deadline` (`attempts_deadline`: its schedule-to-close budget), as Temporal
    does for the retries it makes itself; the delay honours a delay the tool asked for
    (`next_retry_delay`).
    """
    retry = spec.policy.retry
    if not (
        options.workflow_retries
        and isinstance(cause, ApplicationError)
        and not cause.non_retryable
        and (retry.maximum_attempts == 0 or attempts < retry.maximum_attempts)
    ):
        return None
    requested = cause.next_retry_delay
    delay = retry_delay(retry, attempts, None if requested is None else requested.total_seconds())
    if (
        deadline is not None
        and workflow.time() + delay >= deadline
        and workflow.patched(RETRY_BUDGET_PATCH)
    ):
        return None  # the next attempt would start with no budget left
    return delay


async def retry_when_due(delay: float, deadline: float | None) -> bool:
    """Wait `delay` seconds before a workflow-driven retry; False when the call's deadline
    passed meanwhile (the timer fired late), so the retry must not start."""
    await workflow.sleep(timedelta(seconds=delay))
    return not (
        deadline is not None
        and workflow.time() >= deadline
        and workflow.patched(RETRY_BUDGET_PATCH)
    )
