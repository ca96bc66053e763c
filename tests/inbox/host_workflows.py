"""A host that is no agent run, for the inbox's tests: a plain workflow with a
`ToolRuntime` and the approval-gated tool it calls (kept apart from the tests: the
workflow sandbox re-imports the module a workflow is defined in)."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from durable_tools.tools import ToolRegistry
    from durable_tools.workflows import AgentConfig, ToolRuntime

PREFIX = "orders_"


def refund_registry(ran: list[str]) -> ToolRegistry:
    """`refund(order_id)`, approved by a person; each run appends its order to `ran`."""
    registry = ToolRegistry()

    @registry.tool(approval=True, idempotent=True)
    def refund(order_id: str) -> str:
        """Refund an order (a person approves it)."""
        ran.append(order_id)
        return f"refunded {order_id}"

    return registry


@workflow.defn(sandboxed=True)
class RefundPipeline:
    """A plain workflow with no model: one step refunds an order, a person approves it."""

    @workflow.init
    def __init__(self, order: str) -> None:
        self.tools = ToolRuntime(AgentConfig(name="refunds", model="none:x"), prefix=PREFIX)

    @workflow.run
    async def run(self, order: str) -> str:
        reply = await self.tools.call("refund", {"order_id": order}, call_id="refund")
        return f"{reply.status}: {reply.content}"
