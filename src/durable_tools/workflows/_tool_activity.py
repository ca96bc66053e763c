"""Scheduling a tool's activity and deciding a workflow-driven retry.

Shared by an agent's tool calls (`_execute`) and a flow's nodes (`flows._node`): both
schedule the tool's own activity type with its options, count attempts as the activity
reports them, and retry from the workflow on clean, retryable errors.
"""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ApplicationError

from durable_tools.activities._types import ToolInvocation
from durable_tools.tools._results import ToolOutcome
from durable_tools.tools._spec import ToolSpec
from durable_tools.workflows._local_activity import start_local
from durable_tools.workflows._options import ToolActivityOptions, retry_delay

__all__ = [
    "attempts_after",
    "schedule_tool_activity",
    "start_tool_activity",
    "workflow_retry_delay",
]


async def schedule_tool_activity(
    name: str, invocation: ToolInvocation, options: ToolActivityOptions, summary: str | None
) -> ToolOutcome:
    """Run the tool's activity (local or regular, as its options say) and return its outcome.

    Raises:
        temporalio.exceptions.ActivityError: the activity failed, timed out or was cancelled.
    """
    return await start_tool_activity(name, invocation, options, summary)


def start_tool_activity(
    name: str, invocation: ToolInvocation, options: ToolActivityOptions, summary: str | None
) -> asyncio.Task[ToolOutcome]:
    """Schedule the tool's activity now and return the task that ends with its outcome.

    The command is issued before this returns, as `await schedule_tool_activity(...)`
    issues it before its first suspension: a run's commands keep their order whichever
    is used. Cancelling the task cancels the activity; the task raises `ActivityError`
    when the activity failed, timed out or was cancelled.
    """
    shared: dict[str, Any] = {
        "start_to_close_timeout": options.start_to_close_timeout,
        "schedule_to_close_timeout": options.schedule_to_close_timeout,
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
    spec: ToolSpec, options: ToolActivityOptions, cause: BaseException | None, attempts: int
) -> float | None:
    """Seconds to wait before the workflow retries the call, or None when it does not.

    Only clean, retryable tool errors are retried from the workflow (a tool not safe to
    repeat after a timeout is not), within the tool's `maximum_attempts`; the delay honours
    a delay the tool asked for (`next_retry_delay`).
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
    return retry_delay(retry, attempts, None if requested is None else requested.total_seconds())
