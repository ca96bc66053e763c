"""From a tool's execution policy to Temporal activity options. Pure and deterministic."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from temporalio.common import RetryPolicy
from temporalio.workflow import ActivityCancellationType

from durable_tools.tools._spec import RetrySpec, ToolSpec

__all__ = ["ToolActivityOptions", "activity_options_for", "limited_task_queue", "retry_delay"]


@dataclass(frozen=True)
class ToolActivityOptions:
    """Options for scheduling one attempt series of a tool call."""

    start_to_close_timeout: timedelta
    schedule_to_close_timeout: timedelta | None
    heartbeat_timeout: timedelta | None
    retry_policy: RetryPolicy
    task_queue: str | None
    local: bool
    cancellation_type: ActivityCancellationType
    """Always `WAIT_CANCELLATION_COMPLETED`: the activity reports how the tool ended after a
    cancel. The run waits for that at most `AgentConfig.cancel_grace_seconds` (see
    `_execute`), then records the call's outcome as unknown instead."""
    workflow_retries: bool
    """True when the engine must not retry by itself: the tool is not safe to repeat after a
    timeout, so the workflow retries only clean, retryable failures (see `retry_delay`)."""


def _seconds(value: float | None) -> timedelta | None:
    return None if value is None else timedelta(seconds=value)


def limited_task_queue(spec: ToolSpec, run_task_queue: str) -> str | None:
    """The task queue of a tool with `max_concurrent` or `rate_limit`, else None.

    Such a tool needs a queue of its own: Temporal caps activities per worker and rates
    per task queue, not per activity type. It is the tool's explicit `task_queue` when it
    has one, else `<run task queue>.tool.<tool name>`; `build_worker` serves the same name.
    """
    policy = spec.policy
    if not policy.limited or policy.local or spec.subagent is not None:
        return None
    return policy.task_queue or f"{run_task_queue}.tool.{spec.name}"


def activity_options_for(spec: ToolSpec, run_task_queue: str | None = None) -> ToolActivityOptions:
    """Translate a tool's policy. Timeouts retry only for tools safe to repeat.

    Temporal's retry policy cannot tell a timed-out attempt from a failed one, so a
    mutating, non-idempotent tool gets a single attempt per activity and the workflow
    schedules the retries of errors the tool raised cleanly.

    Args:
        spec: The tool.
        run_task_queue: The run's task queue; a limited tool's own queue is named after it.
    """
    policy = spec.policy
    retry = policy.retry
    retry_timeouts = retry.retry_timeouts
    if retry_timeouts is None:
        retry_timeouts = spec.safety.safe_to_repeat
    workflow_retries = not retry_timeouts and retry.maximum_attempts != 1
    return ToolActivityOptions(
        start_to_close_timeout=timedelta(seconds=policy.start_to_close_timeout),
        schedule_to_close_timeout=_seconds(policy.schedule_to_close_timeout),
        heartbeat_timeout=None if policy.local else _seconds(policy.heartbeat_timeout),
        retry_policy=RetryPolicy(
            initial_interval=timedelta(seconds=retry.initial_interval),
            backoff_coefficient=retry.backoff_coefficient,
            maximum_interval=_seconds(retry.maximum_interval),
            maximum_attempts=1 if workflow_retries else retry.maximum_attempts,
            # Kinds that trying again cannot fix are raised non-retryable by the tool
            # activity, which classifies every exception a tool raises (_activities/_tools.py);
            # listing them here too cost ~95 B of history per call. The tool's own list
            # stays: it names exception classes the activity also checks.
            non_retryable_error_types=list(retry.non_retryable_errors) or None,
        ),
        task_queue=_task_queue(spec, run_task_queue),
        local=policy.local is True,  # None: a spec the registry did not resolve runs regular
        cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        workflow_retries=workflow_retries,
    )


def _task_queue(spec: ToolSpec, run_task_queue: str | None) -> str | None:
    if spec.policy.local:
        return None
    if run_task_queue is not None:
        return limited_task_queue(spec, run_task_queue) or spec.policy.task_queue
    return spec.policy.task_queue


def retry_delay(retry: RetrySpec, attempt: int, requested: float | None = None) -> float:
    """Seconds to wait before attempt `attempt + 1`, for workflow-driven retries.

    Args:
        retry: The tool's retry spec.
        attempt: Attempts made so far (1 after the first failure).
        requested: A delay the error asked for (Retry-After); it wins when given.
    """
    if requested is not None:
        return max(0.0, requested)
    delay = retry.initial_interval * retry.backoff_coefficient ** (attempt - 1)
    if retry.maximum_interval is not None:
        delay = min(delay, retry.maximum_interval)
    return delay
