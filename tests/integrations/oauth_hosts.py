"""A Pydantic AI agent for the framework OAuth test (test_framework_oauth.py): it reads the
user's calendar through durable-tools' runtime, whose tool needs the user's OAuth grant
(kept apart from the test: the workflow sandbox re-imports the module a workflow is
defined in, and the OpenAI Agents host is in `oauth_openai_host` for the same reason)."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from pydantic_ai import Agent
    from pydantic_ai.durable_exec.temporal import TemporalDurability
    from pydantic_ai.models.function import FunctionModel

    from durable_tools.integrations.pydantic_ai import DurableToolset
    from durable_tools.tools import Identity
    from durable_tools.workflows import ToolRuntime
    from framework_support import call_then_report

PREFIX = "calendar_"


calendar_reader = Agent(
    FunctionModel(call_then_report("read_calendar", {"day": "friday"}, "c1")),
    name="calendar_reader",
    capabilities=[TemporalDurability()],
)


@workflow.defn(sandboxed=True)
class PydanticCalendarWorkflow:
    """A Pydantic AI agent acting for a user, whose tools are durable-tools'."""

    @workflow.init
    def __init__(self, user: str) -> None:
        self.tools = ToolRuntime(identity=Identity(user=user), prefix=PREFIX)

    @workflow.run
    async def run(self, user: str) -> str:
        result = await calendar_reader.run("my friday?", toolsets=[DurableToolset(self.tools)])
        return str(result.output)
