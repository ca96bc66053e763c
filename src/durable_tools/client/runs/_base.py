"""What every part of `AgentRun` stands on: the run's handle and its handlers by name.

An agent run's handlers have their plain names; an agent loop embedded in a workflow of
the user's has them under its prefix (`AgentLoop.register_handlers`): `_query`,
`_update` and `_signal` put the prefix before every name, so the rest of the handle is
the same for both.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client, WorkflowHandle
from temporalio.service import RPCError

from durable_tools.protocol._limits import check_handler_prefix
from durable_tools.server import ui_url
from durable_tools.workflows import AgentResult, AgentWorkflow, RunSnapshot, ToolCallRecord

__all__ = ["RunBase", "has_workers"]

_T = TypeVar("_T")

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


class RunBase:
    """A run's workflow handle, its handler prefix, and its handlers by name.

    Args:
        client: The client the run is reached through.
        run_id: The run's workflow id.
        output_type: The Python type of the run's structured final answer, for
            `result()` to turn `AgentResult.output` into.
        prefix: The handler prefix of an embedded loop; "" for an agent workflow.

    Raises:
        ValueError: `prefix` is not a handler prefix a loop can have.
    """

    def __init__(
        self, client: Client, run_id: str, output_type: Any = None, *, prefix: str = ""
    ) -> None:
        self.client = client
        self.run_id = run_id
        self.output_type = output_type
        self.prefix = check_handler_prefix(prefix)
        self.handle: WorkflowHandle[AgentWorkflow, AgentResult] = client.get_workflow_handle_for(
            AgentWorkflow.run, run_id
        )

    async def _query(self, name: str, result_type: type[_T], *args: Any) -> _T:
        """Ask the run's query `name` (under the loop's prefix)."""
        answer: _T = await self.handle.query(self.prefix + name, args=args, result_type=result_type)
        return answer

    async def _update(self, name: str, argument: Any, result_type: type[_T]) -> _T:
        """Send the run's update `name` (under the loop's prefix); its verdict."""
        verdict: _T = await self.handle.execute_update(
            self.prefix + name, argument, result_type=result_type
        )
        return verdict

    async def _signal(self, name: str, argument: Any) -> None:
        await self.handle.signal(self.prefix + name, argument)

    @property
    def ui_url(self) -> str:
        """The run's page in the Temporal UI (`TEMPORAL_UI_URL`, else the UI the embedded
        server on the run's address recorded, else the default next to it)."""
        address = self.client.service_client.config.target_host
        return ui_url(self.client.namespace, self.run_id, address=address)

    async def status(self) -> RunSnapshot:
        """What the run is doing now (a query; needs a worker, also for ended runs)."""
        return await self._query("status", RunSnapshot)

    async def timeline(self) -> list[ToolCallRecord]:
        """Every tool call of the run so far."""
        return await self._query("timeline", list[ToolCallRecord])
