"""Workers for tools with `max_concurrent` or `rate_limit`, run beside the main worker.

Temporal caps concurrent activities per worker (`max_concurrent_activities`) and rates
per task queue (`max_task_queue_activities_per_second`, enforced by the server's matching
service across every worker of the queue), not per activity type. So each limited tool
gets a task queue of its own (`protocol._options.limited_task_queue`) and one worker
that serves only that tool's activity with the tool's limits. `ToolWorker` is the main
worker that starts and stops those workers with itself, so `build_worker` keeps
returning one `Worker` that `run()`, `shutdown()` and `async with` drive as before.

The activities of a limited queue are never dispatched eagerly (eager execution only
applies to activities on the workflow's own task queue), so the server's limit sees
every call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker

from durable_tools.protocol._options import limited_task_queue
from durable_tools.tools._registered import RegisteredTool

__all__ = ["ToolWorker", "limited_workers"]

# Options that only mean something for the main queue or for workflows.
_MAIN_QUEUE_ONLY = frozenset(
    {
        "max_task_queue_activities_per_second",
        "workflow_runner",
        "max_cached_workflows",
        "max_concurrent_workflow_tasks",
        "max_concurrent_workflow_task_polls",
        "nonsticky_to_sticky_poll_ratio",
        "sticky_queue_schedule_to_start_timeout",
    }
)


def limited_workers(
    client: Client,
    tools: Sequence[RegisteredTool],
    main_queue: str,
    activity_for: Callable[[RegisteredTool], Callable[..., Any]],
    worker_options: Mapping[str, Any],
) -> list[Worker]:
    """One worker per limited tool's task queue, with the tool's limits.

    Raises:
        ValueError: a limited tool's queue is the main queue, or tools sharing a queue
            declare different limits (one queue has one set of limits).
    """
    by_queue: dict[str, list[RegisteredTool]] = {}
    for tool in tools:
        queue = limited_task_queue(tool.spec, main_queue)
        if queue is None:
            continue
        if queue == main_queue:
            raise ValueError(
                f"tool {tool.spec.name!r} has max_concurrent/rate_limit: it needs a task queue "
                f"of its own, not the worker's queue {main_queue!r}"
            )
        by_queue.setdefault(queue, []).append(tool)
    workers = []
    for queue, group in by_queue.items():
        limits = {(t.spec.policy.max_concurrent, t.spec.policy.rate_limit) for t in group}
        if len(limits) > 1:
            names = ", ".join(t.spec.name for t in group)
            raise ValueError(
                f"tools {names} share task queue {queue!r} with different max_concurrent/"
                "rate_limit: give them the same limits or queues of their own"
            )
        max_concurrent, rate_limit = limits.pop()
        options = {k: v for k, v in worker_options.items() if k not in _MAIN_QUEUE_ONLY}
        if max_concurrent is not None:
            options.pop("tuner", None)  # a tuner and a slot count cannot both be given
            options["max_concurrent_activities"] = max_concurrent
        if rate_limit is not None:
            options["max_task_queue_activities_per_second"] = rate_limit
        workers.append(
            Worker(
                client,
                task_queue=queue,
                activities=[activity_for(tool) for tool in group],
                **options,
            )
        )
    return workers


class ToolWorker(Worker):
    """The main worker, running and stopping the limited tools' workers with itself.

    Args:
        client: As for `Worker`.
        limited: Workers of the limited tools' queues (see `limited_workers`).
        **options: As for `Worker`.
    """

    def __init__(self, client: Client, *, limited: Sequence[Worker] = (), **options: Any) -> None:
        super().__init__(client, **options)
        self.limited_workers = tuple(limited)
        """The workers of the limited tools' task queues."""

    async def run(self) -> None:
        """Run every worker; when one stops (shut down or failed), stop the others.

        Raises:
            BaseException: the first worker failure, after every worker has stopped.
        """
        if not self.limited_workers:
            await super().run()
            return
        runs = [asyncio.ensure_future(Worker.run(self))]
        runs += [asyncio.ensure_future(worker.run()) for worker in self.limited_workers]
        try:
            await asyncio.wait(runs, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            for run in runs:
                run.cancel()
            await asyncio.wait(runs)
            raise
        await self.shutdown()
        outcomes = await asyncio.gather(*runs, return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome

    async def shutdown(self) -> None:
        """Shut every worker down and wait until all have stopped."""
        await asyncio.gather(
            super().shutdown(), *(worker.shutdown() for worker in self.limited_workers)
        )
