"""An OpenAI Agents SDK agent under Temporal's plugin whose tools go through durable-tools'
runtime, on a real dev server: an approval waits durably inside the agent's run (across a
worker restart with no cache), the tool runs once and the model reads its output; a
denial reaches the model as the tool's output."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from temporalio import workflow
from temporalio.client import Client
from temporalio.converter import DataConverter

with workflow.unsafe.imports_passed_through():
    from agents import Agent, Model, ModelResponse, Runner
    from framework_support import PREFIX, pay_registry
    from temporalio.openai_agents import OpenAIAgentsPlugin
    from temporalio.openai_agents.testing import ResponseBuilders, TestModelProvider

    from durable_tools.client import AgentRun
    from durable_tools.integrations.openai_agents import durable_function_tools
    from durable_tools.workflows import ToolRuntime
from support import running_worker, wait_for


class PayingModel(Model):
    """The model: pays A1 (call `p1`), then says what the tool answered."""

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kw: Any
    ) -> ModelResponse:
        outputs = [
            item["output"]
            for item in (input if isinstance(input, list) else [])
            if isinstance(item, dict) and item.get("type") == "function_call_output"
        ]
        if outputs:
            return ResponseBuilders.output_message(f"I read: {outputs[0]}")
        return ResponseBuilders.tool_call('{"order_id": "A1"}', "pay", call_id="p1")

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


@workflow.defn(sandboxed=True)
class OpenAIPayerWorkflow:
    """A user's workflow running an OpenAI Agents agent whose tools are durable-tools'."""

    @workflow.init
    def __init__(self, prompt: str) -> None:
        self.tools = ToolRuntime(prefix=PREFIX)

    @workflow.run
    async def run(self, prompt: str) -> str:
        agent = Agent(name="payer", tools=await durable_function_tools(self.tools))
        result = await Runner.run(agent, prompt)
        return str(result.final_output)


@pytest.fixture
async def agents_client(client: Client) -> AsyncIterator[Client]:
    """The session's server, through a client with the OpenAI Agents plugin (which sets
    its own payload converter: the client starts from the default one)."""
    plugin = OpenAIAgentsPlugin(model_provider=TestModelProvider(PayingModel()))
    yield Client(
        client.service_client,
        namespace=client.namespace,
        data_converter=DataConverter(),
        plugins=[plugin],
    )


@pytest.mark.parametrize("approve", [True, False])
async def test_an_openai_agents_agent_waits_for_approval_and_reads_the_output(
    agents_client: Client, client: Client, task_queue: str, approve: bool
) -> None:
    ran: list[str] = []
    handle = await agents_client.start_workflow(
        OpenAIPayerWorkflow.run, "pay A1", id=f"oa-{approve}-{task_queue}", task_queue=task_queue
    )
    registry = pay_registry(ran)
    async with running_worker(agents_client, registry, task_queue, workflows=[OpenAIPayerWorkflow]):
        # Decided from a client of durable-tools' own (pydantic's converter).
        run = AgentRun(client, handle.id, prefix=PREFIX)
        waiting = await wait_for(run, lambda s: bool(s.pending_approvals), 60)
        pending = waiting.pending_approvals[0]
        assert (pending.call_id, pending.arguments, ran) == ("p1", {"order_id": "A1"}, [])
    # Restarted while the agent waits: a new worker with no cache replays the agent's run.
    async with running_worker(
        agents_client,
        registry,
        task_queue,
        workflows=[OpenAIPayerWorkflow],
        max_cached_workflows=0,
    ):
        await run.decide_request(
            "p1", approve, arguments_hash=pending.arguments_hash, decider="alice", reason="no"
        )
        output = await handle.result()
    if approve:
        assert output == "I read: paid A1" and ran == ["A1"]
    else:
        assert output.startswith("I read: ") and "denied by alice: no" in output and ran == []
