"""The flow workflow: a graph of tool activities run as one child workflow of an agent run.

Each node starts as soon as the nodes it reads (and its explicit edges) have completed, so
independent nodes run concurrently. A node that fails ends the flow: the nodes still
running are cancelled, and the workflow fails with an error naming the node. The flow's
timeout bounds the whole graph the same way. A completed node is never run again: the
flow is a workflow, and a replay (a worker restart) reads its result from history.

The workflow is total: an input that does not validate fails the run at once (pydantic's
`ValidationError` is a failure type), a plan that cannot make progress fails it with a
message, and nothing a tool returns can make a workflow task fail.
"""

# No `from __future__ import annotations`: the sandbox re-imports this module per run.

import asyncio
from typing import Any

from pydantic import ValidationError
from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from durable_tools.tools._errors import (
        ErrorKind,
        ToolExecutionError,
        ToolTimeout,
        error_message_for_model,
    )
    from durable_tools.tools._flow_model import (
        CANCEL_GRACE_SECONDS,
        FLOW_WORKFLOW,
        MAX_NODES,
        FlowInput,
        FlowPlan,
        FlowResult,
        NodeReport,
        PlannedNode,
    )

from durable_tools.workflows.flow._node import NodeDone, NodeFailed, run_node
from durable_tools.workflows.flow._output import flow_outcome
from durable_tools.workflows.flow._resolve import Unresolvable

__all__ = ["FlowWorkflow"]


@workflow.defn(name=FLOW_WORKFLOW, failure_exception_types=[ValidationError])
class FlowWorkflow:
    """Runs a flow's nodes; returns a `FlowResult` or fails naming the node that broke."""

    def __init__(self) -> None:
        self._reports: dict[str, NodeReport] = {}

    @workflow.run
    async def run(self, input: FlowInput) -> FlowResult:
        _check_plan(input.plan)
        for node in input.plan.nodes:
            self._reports[node.id] = NodeReport(
                node=node.id, tool=node.spec.name, status="not_started"
            )
        return await _Run(input, self._reports).run()

    @workflow.query
    def nodes(self) -> list[NodeReport]:
        """How each node stands: not started, completed, failed or cancelled."""
        return list(self._reports.values())


def _check_plan(plan: FlowPlan) -> None:
    """Refuse a plan no registration would have made (a hand-started flow)."""
    ids = [node.id for node in plan.nodes]
    problem = None
    if not ids or len(ids) > MAX_NODES:
        problem = f"{len(ids)} nodes (1 to {MAX_NODES} allowed)"
    elif len(set(ids)) != len(ids):
        problem = "duplicate node ids"
    else:
        unknown = {dep for node in plan.nodes for dep in node.after} - set(ids)
        if unknown:
            problem = f"nodes wait for unknown nodes {sorted(unknown)}"
    if problem is not None:
        raise ApplicationError(
            f"flow {plan.name!r}: invalid plan: {problem}",
            type="InvalidFlowPlan",
            non_retryable=True,
        )


class _Run:
    """The state of one flow run: which nodes are waiting, running and done."""

    def __init__(self, input: FlowInput, reports: dict[str, NodeReport]) -> None:
        self.input = input
        self.plan = input.plan
        self.reports = reports
        self.done: dict[str, NodeDone] = {}
        self.values: dict[str, Any] = {}
        self.waiting: dict[str, PlannedNode] = {node.id: node for node in self.plan.nodes}
        self.running: dict[str, asyncio.Task[NodeDone]] = {}

    async def run(self) -> FlowResult:
        deadline = workflow.time() + self.plan.timeout_seconds
        try:
            while self.waiting or self.running:
                self._start_ready()
                if not self.running:
                    stuck = ", ".join(self.waiting)
                    raise self._error(
                        f"nodes {stuck} wait for each other and can never start",
                        "InvalidFlowPlan",
                    )
                remaining = deadline - workflow.time()
                finished, _ = await workflow.wait(
                    list(self.running.values()),
                    timeout=max(remaining, 0.0),
                    return_when=asyncio.FIRST_COMPLETED,
                )
                if not finished:
                    raise self._timed_out()
                self._collect()
            outcome = flow_outcome(self.input, self.done, self.values, workflow.info().workflow_id)
        except (ApplicationError, asyncio.CancelledError):
            # A node failed, the flow timed out, or the agent run cancelled the flow:
            # nothing may go on acting after the flow has ended.
            await self._stop_running()
            raise
        except (Unresolvable, ValueError) as exc:  # a hand-made plan's output
            raise self._error(f"its output cannot be built: {exc}", "InvalidFlowPlan") from None
        return FlowResult(outcome=outcome, nodes=tuple(self.reports.values()))

    def _start_ready(self) -> None:
        for node_id, node in list(self.waiting.items()):  # plan order: deterministic
            if all(dep in self.done for dep in node.after):
                del self.waiting[node_id]
                self.running[node_id] = asyncio.create_task(run_node(self.input, node, self.values))

    async def _node(self, node: PlannedNode) -> NodeDone:
        try:
            return await run_node(self.input, node, self.values)
        except NodeFailed:
            raise
        except Exception as exc:  # a bug must fail the node, never the workflow task
            message = f"the flow could not run it: {type(exc).__name__}: {exc}"[:1_000]
            raise NodeFailed(message, ErrorKind.EXECUTION.value, 0) from None

    def _collect(self) -> None:
        failed: ApplicationError | None = None
        for node_id, task in list(self.running.items()):  # plan order: deterministic
            if not task.done():
                continue
            del self.running[node_id]
            report = self.reports[node_id]
            try:
                result = task.result()
            except NodeFailed as failure:
                self.reports[node_id] = report.model_copy(
                    update={
                        "status": "failed",
                        "attempts": failure.attempts,
                        "detail": failure.message[:300],
                    }
                )
                failed = failed or self._node_error(node_id, failure)
                continue
            self.done[node_id] = result
            self.values[node_id] = result.value
            self.reports[node_id] = report.model_copy(
                update={
                    "status": "completed",
                    "attempts": result.outcome.attempt,
                    "detail": result.outcome.content[:300],
                }
            )
        if failed is not None:
            raise failed

    async def _stop_running(self) -> None:
        """Cancel the nodes still running and give them a moment to acknowledge it."""
        tasks = [task for task in self.running.values() if not task.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            await workflow.wait(tasks, timeout=CANCEL_GRACE_SECONDS)
        for node_id in self.running:
            self.reports[node_id] = self.reports[node_id].model_copy(update={"status": "cancelled"})
        self.running.clear()

    def _timed_out(self) -> ApplicationError:
        running = ", ".join(self.running) or "none"
        waiting = ", ".join(self.waiting) or "none"
        seconds = f"{self.plan.timeout_seconds:g}"
        where = f"nodes running: {running}; not started: {waiting}"
        return self._error(
            f"timed out after {seconds} s ({where})",
            ErrorKind.TIMEOUT.value,
            ToolTimeout(f"the flow took longer than its {seconds} s timeout ({where})"),
        )

    def _node_error(self, node_id: str, failure: NodeFailed) -> ApplicationError:
        tool = self.reports[node_id].tool
        text = f"node {node_id!r} (tool {tool!r}) failed: {failure.message}"
        return self._error(text, failure.kind, ToolExecutionError(text))

    def _error(self, message: str, kind: str, error: Any = None) -> ApplicationError:
        flow = self.plan.name
        model_text = error_message_for_model(
            self.input.call_id, flow, error or ToolExecutionError(message)
        )
        return ApplicationError(
            f"flow {flow!r}: {message}"[:2_000],
            model_text[:4_000],
            [report.model_dump(mode="json") for report in self.reports.values()],
            type=kind,
            non_retryable=True,
        )
