"""An OpenAI Agents agent for the framework OAuth test (test_framework_oauth.py): it reads
the user's calendar through durable-tools' runtime, whose tool needs the user's OAuth
grant."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from agents import Agent, Runner

    from durable_tools.integrations.openai_agents import durable_function_tools
    from durable_tools.tools import Identity
    from durable_tools.workflows import ToolRuntime

PREFIX = "calendar_"


@workflow.defn(sandboxed=True)
class OpenAICalendarWorkflow:
    """An OpenAI Agents agent acting for a user, whose tools are durable-tools'."""

    @workflow.init
    def __init__(self, user: str) -> None:
        self.tools = ToolRuntime(identity=Identity(user=user), prefix=PREFIX)

    @workflow.run
    async def run(self, user: str) -> str:
        agent = Agent(name="calendar", tools=await durable_function_tools(self.tools))
        result = await Runner.run(agent, "my friday?")
        return str(result.final_output)
