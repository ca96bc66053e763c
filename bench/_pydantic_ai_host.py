"""The Pydantic AI workflows of `python -m bench.frameworks`: one agent whose `lookup` goes
through durable-tools' runtime (`DurableToolset`), one whose `lookup` is Pydantic AI's own
function tool (its Temporal tool activity); the same scripted model calls it N times,
one call a turn. Kept apart: the workflow sandbox re-imports the module a workflow is
defined in, and a worker without Pydantic AI's plugin cannot import Pydantic AI there."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from pydantic_ai import Agent
    from pydantic_ai.durable_exec.temporal import TemporalDurability
    from pydantic_ai.messages import (
        ModelMessage,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from bench._common import lookup
    from durable_tools.integrations.pydantic_ai import DurableToolset
    from durable_tools.workflows import ToolRuntime

__all__ = ["OursWorkflow", "OwnToolWorkflow", "ours_agent", "own_tool_agent"]


def call_lookup_n_times(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The model: calls `lookup` once a turn until it has read N results (N = the prompt)."""
    parts = [part for message in messages for part in getattr(message, "parts", [])]
    wanted = int(next(str(p.content) for p in parts if isinstance(p, UserPromptPart)))
    done = sum(isinstance(p, ToolReturnPart) for p in parts)
    if done < wanted:
        call = ToolCallPart("lookup", {"key": f"k{done}"}, tool_call_id=f"c{done}")
        return ModelResponse(parts=[call])
    return ModelResponse(parts=[TextPart(f"done after {done} calls")])


ours_agent = Agent(
    FunctionModel(call_lookup_n_times), name="bench_ours", capabilities=[TemporalDurability()]
)
own_tool_agent = Agent(
    FunctionModel(call_lookup_n_times),
    name="bench_own_tool",
    tools=[lookup],
    capabilities=[TemporalDurability()],
)


@workflow.defn(sandboxed=True)
class OursWorkflow:
    """`lookup` through durable-tools' runtime."""

    @workflow.init
    def __init__(self, calls: int) -> None:
        self.tools = ToolRuntime()

    @workflow.run
    async def run(self, calls: int) -> str:
        result = await ours_agent.run(str(calls), toolsets=[DurableToolset(self.tools)])
        return str(result.output)


@workflow.defn(sandboxed=True)
class OwnToolWorkflow:
    """`lookup` as Pydantic AI's own function tool (an activity of its Temporal toolset)."""

    @workflow.run
    async def run(self, calls: int) -> str:
        result = await own_tool_agent.run(str(calls))
        return str(result.output)
