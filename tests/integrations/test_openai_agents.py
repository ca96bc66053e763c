"""An OpenAI Agents SDK agent under Temporal's plugin whose tools go through durable-tools'
runtime, on a real dev server: an approval waits durably inside the agent's run (across a
worker restart with no cache), the tool runs once and the model reads its output; a
denial reaches the model as the tool's output."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from temporalio import workflow
from temporalio.client import Client

with workflow.unsafe.imports_passed_through():
    from agents import Agent, Runner

    from durable_tools.client import AgentRun
    from durable_tools.integrations.openai_agents import durable_function_tools
    from durable_tools.workflows import ToolRuntime
    from fake_openai import FakeOpenAIServer
    from framework_support import (
        PAY_NOTES,
        PREFIX,
        openai_agents_client,
        pay_registry,
        responses_call_then_report,
    )
from support import running_worker, wait_for


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
def fake_openai() -> Iterator[FakeOpenAIServer]:
    """An OpenAI-compatible server on 127.0.0.1: its model pays A1, then says what it read."""
    with FakeOpenAIServer(responses_call_then_report("pay", '{"order_id": "A1"}', "p1")) as server:
        yield server


@pytest.fixture
def agents_client(client: Client, fake_openai: FakeOpenAIServer) -> Client:
    """The session's server through a client with the OpenAI Agents plugin, whose model is
    the fake server."""
    return openai_agents_client(client, fake_openai)


@pytest.mark.parametrize("approve", [True, False])
async def test_an_openai_agents_agent_waits_for_approval_and_reads_the_output(
    agents_client: Client,
    client: Client,
    fake_openai: FakeOpenAIServer,
    task_queue: str,
    approve: bool,
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
    # The model was offered the tool with its schema, and read its output as a tool result.
    first, last = fake_openai.requests[0].json, fake_openai.requests[-1].json
    [offered] = first["tools"]
    assert (offered["name"], offered["parameters"]["required"]) == ("pay", ["order_id"])
    assert offered["description"].endswith(f"Safety notes: {PAY_NOTES}"), offered
    [returned] = [i for i in last["input"] if i.get("type") == "function_call_output"]
    assert returned["call_id"] == "p1"
    if approve:
        assert output == "I read: paid A1" and ran == ["A1"]
    else:
        assert output.startswith("I read: ") and "denied by alice: no" in output and ran == []
