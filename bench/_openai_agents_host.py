"""The OpenAI Agents workflows of `python -m bench.frameworks`: one agent whose `lookup`
goes through durable-tools' runtime (`durable_function_tools`), one whose `lookup` is the
plugin's `activity_as_tool`; the same scripted model (`LookupModel`, run by the plugin's
model activity) calls it N times, one call a turn."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from temporalio import activity, workflow

with workflow.unsafe.imports_passed_through():
    from agents import Agent, Model, ModelResponse, Runner
    from temporalio.openai_agents.testing import ResponseBuilders
    from temporalio.openai_agents.workflow import activity_as_tool

    from bench import _common
    from durable_tools.integrations.openai_agents import durable_function_tools
    from durable_tools.workflows import ToolRuntime

__all__ = ["LookupModel", "OursWorkflow", "OwnToolWorkflow", "lookup"]


@activity.defn(name="bench_lookup")
async def lookup(key: str) -> str:
    """Look a key up: `lookup` as a plain Temporal activity, for the plugin's
    `activity_as_tool` (which names the tool after the function)."""
    return _common.lookup(key)


class LookupModel(Model):
    """The model: calls `lookup` once a turn until it has read N results (N = the prompt)."""

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kw: Any
    ) -> ModelResponse:
        items = input if isinstance(input, list) else [{"role": "user", "content": input}]
        wanted = int(next(i["content"] for i in items if i.get("role") == "user"))
        done = sum(1 for i in items if i.get("type") == "function_call_output")
        if done < wanted:
            arguments = json.dumps({"key": f"k{done}"})
            return ResponseBuilders.tool_call(arguments, "lookup", call_id=f"c{done}")
        return ResponseBuilders.output_message(f"done after {done} calls")

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


@workflow.defn(sandboxed=True)
class OursWorkflow:
    """`lookup` through durable-tools' runtime."""

    @workflow.init
    def __init__(self, calls: int) -> None:
        self.tools = ToolRuntime()

    @workflow.run
    async def run(self, calls: int) -> str:
        agent = Agent(name="bench_ours", tools=await durable_function_tools(self.tools))
        result = await Runner.run(agent, str(calls), max_turns=calls + 2)
        return str(result.final_output)


@workflow.defn(sandboxed=True)
class OwnToolWorkflow:
    """`lookup` as the plugin's `activity_as_tool`."""

    @workflow.run
    async def run(self, calls: int) -> str:
        tool = activity_as_tool(lookup, start_to_close_timeout=timedelta(seconds=30))
        agent = Agent(name="bench_own_tool", tools=[tool])
        result = await Runner.run(agent, str(calls), max_turns=calls + 2)
        return str(result.final_output)
