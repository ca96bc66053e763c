"""A Pydantic AI agent (Pydantic AI's `TemporalDurability`) whose tools are durable-tools',
for the inbox's tests (its worker needs `AgentPlugin(refunder)`)."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from host_workflows import PREFIX
    from pydantic_ai import Agent
    from pydantic_ai.durable_exec.temporal import TemporalDurability
    from pydantic_ai.messages import (
        ModelMessage,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from durable_tools.integrations.pydantic_ai import DurableToolset
    from durable_tools.workflows import ToolRuntime


def refund_then_report(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The model: refunds A1, then repeats what it read."""
    returns = [
        part
        for message in messages
        for part in getattr(message, "parts", [])
        if isinstance(part, ToolReturnPart)
    ]
    if not returns:
        call = ToolCallPart("refund", {"order_id": "A1"}, tool_call_id="r1")
        return ModelResponse(parts=[call])
    return ModelResponse(parts=[TextPart(f"I read: {returns[0].content}")])


refunder = Agent(
    FunctionModel(refund_then_report), name="refunder", capabilities=[TemporalDurability()]
)


@workflow.defn(sandboxed=True)
class RefunderWorkflow:
    """A user's workflow running a Pydantic AI agent whose tools are durable-tools'."""

    @workflow.init
    def __init__(self, prompt: str) -> None:
        self.tools = ToolRuntime(prefix=PREFIX)

    @workflow.run
    async def run(self, prompt: str) -> str:
        result = await refunder.run(prompt, toolsets=[DurableToolset(self.tools)])
        return str(result.output)
