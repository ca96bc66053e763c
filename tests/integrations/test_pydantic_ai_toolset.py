"""A real Pydantic AI `TemporalAgent` whose tools go through durable-tools' runtime, on a real
dev server: an approval waits durably inside the agent's run (across a worker restart with
no cache), the tool runs once and the agent's model reads its result; a denial reaches the
model as the tool's result; a reused call id cannot be approved with a stale hash."""

from __future__ import annotations

import json
from collections.abc import Awaitable
from typing import Any

import pytest
from temporalio import workflow
from temporalio.client import Client

with workflow.unsafe.imports_passed_through():
    from pydantic_ai import Agent
    from pydantic_ai.durable_exec.temporal import (
        AgentPlugin,
        TemporalAgent,
        TemporalDurability,
    )
    from pydantic_ai.messages import (
        ModelMessage,
        ModelResponse,
        TextPart,
        ToolCallPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from cli_support import cli, cli_env  # noqa: F401  (a fixture)
    from durable_tools.client import AgentRun, StaleRequest
    from durable_tools.integrations.pydantic_ai import DurableToolset
    from durable_tools.workflows import RunSnapshot, ToolCallRecord, ToolRuntime
    from framework_support import (
        PAY_NOTES,
        PREFIX,
        call_then_report,
        pay_registry,
        pydantic_ai_client,
        tool_returns,
    )
from support import running_worker, wait_for


def pay_twice(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The model: pays A1, then pays B2 under the same call id, then says what it read."""
    returns = tool_returns(messages)
    if len(returns) < 2:
        order = ["A1", "B2"][len(returns)]
        return ModelResponse(parts=[ToolCallPart("pay", {"order_id": order}, tool_call_id="p1")])
    # It also says what it read of the tool: durable-tools' description, safety notes too.
    described = [t.description for t in info.function_tools if t.name == "pay"]
    return ModelResponse(
        parts=[TextPart(json.dumps([str(r.content) for r in returns] + described))]
    )


payer = TemporalAgent(Agent(FunctionModel(pay_twice), name="payer"))


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


def _worker(client: Client, ran: list[str], task_queue: str, **options: Any) -> Any:
    return running_worker(
        client,
        pay_registry(ran),
        task_queue,
        workflows=[PayerWorkflow],
        plugins=[AgentPlugin(payer)],
        **options,
    )


def _pending(client: Client, host_id: str, calls: int) -> Awaitable[RunSnapshot]:
    """The runtime's status once the `calls`-th call waits for a person."""
    run = AgentRun(client, host_id, prefix=PREFIX)
    return wait_for(run, lambda s: bool(s.pending_approvals) and s.tool_calls == calls, 60)


@pytest.mark.usefixtures("cli_env")
async def test_a_pydantic_ai_agent_waits_for_approval_and_reads_the_result(
    client: Client, task_queue: str, capsys: pytest.CaptureFixture[str]
) -> None:
    ran: list[str] = []
    client = pydantic_ai_client(client)
    handle = await client.start_workflow(
        PayerWorkflow.run, "pay A1 and B2", id=f"payer-{task_queue}", task_queue=task_queue
    )
    async with _worker(client, ran, task_queue):
        first = (await _pending(client, handle.id, 1)).pending_approvals[0]
        assert (first.call_id, first.arguments) == ("p1", {"order_id": "A1"}) and ran == []
        code, _, err = await cli(
            capsys, "approve", handle.id, "p1", "--prefix", PREFIX,
            "--hash", first.arguments_hash, "--as", "alice",
        )  # fmt: skip
        assert code == 0, err
        second = (await _pending(client, handle.id, 2)).pending_approvals[0]
    assert second.arguments == {"order_id": "B2"} and ran == ["A1"]
    # Restarted while the agent waits: a new worker with no cache replays the agent's run.
    async with _worker(client, ran, task_queue, max_cached_workflows=0):
        run = AgentRun(client, handle.id, prefix=PREFIX)
        with pytest.raises(StaleRequest):  # the model reused the call id: A1's hash is stale
            await run.decide_request("p1", True, arguments_hash=first.arguments_hash, decider="b")
        await run.decide_request("p1", True, arguments_hash=second.arguments_hash, decider="bob")
        output = json.loads(await handle.result())
    assert ran == ["A1", "B2"]
    assert ["paid A1" in output[0], "paid B2" in output[1]] == [True, True]
    assert output[2].endswith(f"Safety notes: {PAY_NOTES}"), output[2]


# The capability that replaces `TemporalAgent` in Pydantic AI 2.x: the toolset is the same.
denied_payer = Agent(
    FunctionModel(call_then_report("pay", {"order_id": "A1"}, "p1")),
    name="denied_payer",
    capabilities=[TemporalDurability()],
)


@workflow.defn(sandboxed=True)
class DeniedPayerWorkflow:
    """An agent with Pydantic AI's `TemporalDurability` capability; the toolset finds the
    workflow's runtime through a function, and offers one tool of the catalog."""

    @workflow.init
    def __init__(self, prompt: str) -> None:
        self.tools = ToolRuntime(prefix=PREFIX)

    @workflow.run
    async def run(self, prompt: str) -> str:
        toolset = DurableToolset(lambda: self.tools, tools=["pay"])
        result = await denied_payer.run(prompt, toolsets=[toolset])
        return str(result.output)


async def test_a_denial_reaches_the_agents_model_as_the_tool_result(
    client: Client, task_queue: str
) -> None:
    ran: list[str] = []
    client = pydantic_ai_client(client)
    handle = await client.start_workflow(
        DeniedPayerWorkflow.run, "pay A1", id=f"denied-{task_queue}", task_queue=task_queue
    )
    async with running_worker(
        client,
        pay_registry(ran),
        task_queue,
        workflows=[DeniedPayerWorkflow],
        plugins=[AgentPlugin(denied_payer)],
    ):
        await _pending(client, handle.id, 1)
        await AgentRun(client, handle.id, prefix=PREFIX).decide_request(
            "p1", False, arguments_hash=None, decider="carol", reason="not this month"
        )
        output = await handle.result()
    assert output.startswith("I read: ") and "carol" in output and "not this month" in output
    assert ran == []


def pay_both_at_once(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The model: asks for two payments in one answer, then says what it read."""
    returns = tool_returns(messages)
    if not returns:
        return ModelResponse(
            parts=[
                ToolCallPart("pay", {"order_id": "A1"}, tool_call_id="a"),
                ToolCallPart("pay", {"order_id": "B2"}, tool_call_id="b"),
            ]
        )
    return ModelResponse(parts=[TextPart(json.dumps(sorted(str(r.content) for r in returns)))])


parallel_payer = Agent(
    FunctionModel(pay_both_at_once), name="parallel_payer", capabilities=[TemporalDurability()]
)


@workflow.defn(sandboxed=True)
class ParallelPayerWorkflow:
    """Pydantic AI runs a turn's tool calls at once: both wait in the runtime together."""

    @workflow.init
    def __init__(self, prompt: str) -> None:
        self.tools = ToolRuntime(prefix=PREFIX)

    @workflow.run
    async def run(self, prompt: str) -> str:
        result = await parallel_payer.run(prompt, toolsets=[DurableToolset(self.tools)])
        return str(result.output)


async def test_calls_made_at_once_wait_together_and_each_runs_once(
    client: Client, task_queue: str
) -> None:
    ran: list[str] = []
    client = pydantic_ai_client(client)
    handle = await client.start_workflow(
        ParallelPayerWorkflow.run, "pay both", id=f"parallel-{task_queue}", task_queue=task_queue
    )
    async with running_worker(
        client,
        pay_registry(ran),
        task_queue,
        workflows=[ParallelPayerWorkflow],
        plugins=[AgentPlugin(parallel_payer)],
    ):
        run = AgentRun(client, handle.id, prefix=PREFIX)
        waiting = await wait_for(run, lambda s: len(s.pending_approvals) == 2, 60)
        by_call = {p.call_id: p for p in waiting.pending_approvals}
        assert {c: p.arguments["order_id"] for c, p in by_call.items()} == {"a": "A1", "b": "B2"}
        await run.decide_request("b", True, arguments_hash=by_call["b"].arguments_hash, decider="x")
        await wait_for(run, lambda s: [p.call_id for p in s.pending_approvals] == ["a"], 60)
        await run.decide_request("a", True, arguments_hash=by_call["a"].arguments_hash, decider="y")
        output = json.loads(await handle.result())
        timeline = await handle.query(f"{PREFIX}timeline", result_type=list[ToolCallRecord])
    assert sorted(ran) == ["A1", "B2"]
    assert output == ["paid A1", "paid B2"]
    assert sorted((r.call_id, r.decided_by, r.status) for r in timeline) == [
        ("a", "y", "completed"),
        ("b", "x", "completed"),
    ]
