"""The OpenAI Agents workflow of the framework crash test (test_framework_crash.py), shared
by the test and its worker processes (framework_worker.py): an agent that pays through
durable-tools' runtime. Apart from `crash_hosts`: a worker without Pydantic AI's plugin
cannot import Pydantic AI in the workflow sandbox."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from agents import Agent, Runner

    from durable_tools.integrations.openai_agents import durable_function_tools
    from durable_tools.workflows import ToolRuntime
    from framework_support import PREFIX


@workflow.defn(sandboxed=True)
class OpenAICrashPayerWorkflow:
    """A user's workflow running an OpenAI Agents agent whose tools are durable-tools'."""

    @workflow.init
    def __init__(self, prompt: str) -> None:
        self.tools = ToolRuntime(prefix=PREFIX)

    @workflow.run
    async def run(self, prompt: str) -> str:
        agent = Agent(name="crash_payer", tools=await durable_function_tools(self.tools))
        result = await Runner.run(agent, prompt)
        return str(result.final_output)
