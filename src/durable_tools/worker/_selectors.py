"""How a worker hands its tool selectors to the agent runs it executes.

Workflow code never imports user modules, and a run's state is built in the workflow: a
worker interceptor gives each agent run, at its start on this worker, the selectors the
worker was built with (`build_worker(tool_selectors=...)`). The selectors then run in the
run's workflow code (`workflows.catalog._selection`): they must be deterministic.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from temporalio import workflow
from temporalio.worker import (
    ExecuteWorkflowInput,
    Interceptor,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
)

from durable_tools.workflows.catalog._selection import ToolSelector, check_selectors

__all__ = ["ToolSelectorsInterceptor"]


class ToolSelectorsInterceptor(Interceptor):
    """Hands `selectors` to every agent run a worker executes."""

    def __init__(self, selectors: Mapping[str, ToolSelector]) -> None:
        self.selectors = check_selectors(selectors)

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor] | None:
        selectors = self.selectors

        class HandSelectors(WorkflowInboundInterceptor):
            async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
                use = getattr(workflow.instance(), "use_tool_selectors", None)
                if use is not None:  # the agent workflow; other workflows take none
                    use(selectors)
                return await super().execute_workflow(input)

        return HandSelectors
