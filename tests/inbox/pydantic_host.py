"""A Pydantic AI agent (Pydantic AI's `TemporalDurability`) whose tools are durable-tools',
for the inbox's tests (its worker needs `AgentPlugin(payer)`)."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from host_workflows import PREFIX
    from pydantic_ai import Agent
    from pydantic_ai.durable_exec.temporal import TemporalDurability
    from pydantic_ai.models.function import FunctionModel

    from durable_tools.integrations.pydantic_ai import DurableToolset
    from durable_tools.workflows import ToolRuntime
    from framework_support import call_then_report


payer = Agent(
    FunctionModel(call_then_report("pay", {"order_id": "A1"}, "p1")),
    name="payer",
    capabilities=[TemporalDurability()],
)


@workflow.defn(sandboxed=True)
class PayerWorkflow:
    """A user's workflow running a Pydantic AI agent whose tools are durable-tools'."""

    @workflow.init
    def __init__(self, prompt: str) -> None:
        self.tools = ToolRuntime(prefix=PREFIX)

    @workflow.run
    async def run(self, prompt: str) -> str:
        result = await payer.run(prompt, toolsets=[DurableToolset(self.tools)])
        return str(result.output)
