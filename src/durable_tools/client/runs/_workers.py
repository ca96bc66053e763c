"""Whether a worker polls a run's task queue: asked of the server before a query that would
otherwise wait for a worker until it times out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client
from temporalio.service import RPCError

__all__ = ["has_workers"]

_POLLER_FRESH = 75.0
"""Seconds since a worker's last poll within which it counts as polling (long polls last
up to ~70 s)."""
_DESCRIBE_SECONDS = 5.0


async def has_workers(client: Client, task_queue: str) -> bool:
    """Whether a worker polled the task queue for workflow tasks in the last ~75 s.

    A query to a run whose task queue has no worker waits until it times out; asking the
    server first answers at once. Long polls last up to ~70 s, so a live worker is seen
    within that window; a worker that died more recently still counts (the query then
    times out).
    """
    try:
        response = await client.workflow_service.describe_task_queue(
            DescribeTaskQueueRequest(
                namespace=client.namespace,
                task_queue=TaskQueue(name=task_queue),
                task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
            ),
            timeout=timedelta(seconds=_DESCRIBE_SECONDS),
        )
    except RPCError:
        return True  # cannot tell: let the query decide
    now = datetime.now(UTC)
    return any(
        (now - poller.last_access_time.ToDatetime(UTC)).total_seconds() < _POLLER_FRESH
        for poller in response.pollers
    )
