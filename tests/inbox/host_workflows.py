"""A host that is no agent run, for the inbox's tests: a plain workflow with a
`ToolRuntime` calling the approval-gated `pay` of `framework_support.pay_registry` (kept
apart from the tests: the workflow sandbox re-imports the module a workflow is defined
in)."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from durable_tools.workflows import AgentConfig, ToolRuntime

PREFIX = "orders_"


@workflow.defn(sandboxed=True)
class PaymentPipeline:
    """A plain workflow with no model: one step pays an order, a person approves it."""

    @workflow.init
    def __init__(self, order: str) -> None:
        self.tools = ToolRuntime(AgentConfig(name="payments", model="none:x"), prefix=PREFIX)

    @workflow.run
    async def run(self, order: str) -> str:
        reply = await self.tools.call("pay", {"order_id": order}, call_id="pay")
        return f"{reply.status}: {reply.content}"


@workflow.defn(sandboxed=True)
class IdleWorkflow:
    """A workflow of the user's with no runtime: nothing of it can be decided."""

    @workflow.run
    async def run(self) -> None:
        await workflow.wait_condition(lambda: False)
