"""durable-tools' tool runtime without its agent loop: a plain workflow, and a Pydantic AI agent.

Both pay through a tool that waits for a person's approval, inside the workflow, and are
approved through the host's prefixed handlers (`AgentRun(..., prefix=)`, or
`durable-tools approve HOST CALL --hash H --prefix tools_`, or the web inbox,
`durable-tools serve`, which lists the waiting call with the agent runs' and finds the
prefix itself).

Uses the Temporal server at TEMPORAL_ADDRESS, or starts the embedded dev server.
Run it with `python examples/frameworks.py` (needs `pydantic-ai-slim`: the `pydantic-ai`
extra).
"""

import asyncio
import os
import sys
import uuid

from temporalio import workflow
from temporalio.client import Client

from durable_tools.client import AgentRun
from durable_tools.server import ensure_server
from durable_tools.tools import ToolRegistry
from durable_tools.worker import build_worker

# --8<-- [start:imports]
with workflow.unsafe.imports_passed_through():
    from pydantic_ai import Agent
    from pydantic_ai.durable_exec.temporal import (
        AgentPlugin,
        PydanticAIPlugin,
        TemporalDurability,
    )
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from durable_tools.integrations.pydantic_ai import DurableToolset
    from durable_tools.workflows import ToolRuntime
# --8<-- [end:imports]

# --8<-- [start:registry]
registry = ToolRegistry()


@registry.tool(approval=True, idempotent=True)
def pay_invoice(invoice: str, amount_cents: int) -> str:
    """Pay an invoice. A person approves each payment."""
    return f"paid {amount_cents} on {invoice}"


# --8<-- [end:registry]


# --8<-- [start:plain]
@workflow.defn
class InvoiceWorkflow:
    """An invoice pipeline with no model: one step pays, and a person approves it."""

    @workflow.init
    def __init__(self, invoice: str) -> None:
        self.tools = ToolRuntime(prefix="tools_")

    @workflow.run
    async def run(self, invoice: str) -> str:
        reply = await self.tools.call(
            "pay_invoice", {"invoice": invoice, "amount_cents": 4200}, call_id="pay"
        )
        return reply.content if reply.ok else f"not paid: {reply.content}"


# --8<-- [end:plain]


def stand_in_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """A stand-in for an LLM (`FunctionModel`): pays INV-7, then says what the tool said."""
    answered = [p for m in messages for p in m.parts if p.part_kind == "tool-return"]
    if not answered:
        pay = ToolCallPart("pay_invoice", {"invoice": "INV-7", "amount_cents": 990}, "c1")
        return ModelResponse(parts=[pay])
    return ModelResponse(parts=[TextPart(f"Done: {answered[0].content}")])


# --8<-- [start:pydantic_ai]
agent = Agent(
    FunctionModel(stand_in_model),  # your model: "openai:gpt-4.1", ...
    name="payer",
    capabilities=[TemporalDurability()],
)


@workflow.defn
class PayerWorkflow:
    """A Pydantic AI agent whose tools are durable-tools' (approvals wait in its run)."""

    @workflow.init
    def __init__(self, prompt: str) -> None:
        self.tools = ToolRuntime(prefix="tools_")

    @workflow.run
    async def run(self, prompt: str) -> str:
        result = await agent.run(prompt, toolsets=[DurableToolset(self.tools)])
        return result.output


# --8<-- [end:pydantic_ai]


async def approve_when_waiting(client: Client, host_id: str) -> None:
    # --8<-- [start:approve]
    run = AgentRun(client, host_id, prefix="tools_")
    status = await run.status()
    while not status.pending_approvals:  # until the call waits for a person
        await asyncio.sleep(0.1)
        status = await run.status()
    pending = status.pending_approvals[0]
    await run.decide_request(
        pending.call_id, True, arguments_hash=pending.arguments_hash, decider="alice"
    )
    # --8<-- [end:approve]


async def main() -> None:
    started, server = await ensure_server()  # an existing server, or the embedded one
    try:
        # --8<-- [start:worker]
        client = Client(  # Pydantic AI's plugin on the client (its payload converter)
            started.service_client,
            namespace=started.namespace,
            data_converter=started.data_converter,
            plugins=[PydanticAIPlugin()],
        )
        worker = build_worker(
            client,
            registry,
            task_queue="frameworks",
            workflows=[InvoiceWorkflow, PayerWorkflow],
            plugins=[AgentPlugin(agent)],  # the agent's model activity
        )
        # --8<-- [end:worker]
        async with worker:
            plain_id = f"invoice-{uuid.uuid4()}"
            plain = await client.start_workflow(
                InvoiceWorkflow.run, "INV-1", id=plain_id, task_queue="frameworks"
            )
            await approve_when_waiting(client, plain_id)
            print("plain workflow:", await plain.result())
            agent_id = f"payer-{uuid.uuid4()}"
            payer = await client.start_workflow(
                PayerWorkflow.run, "pay INV-7", id=agent_id, task_queue="frameworks"
            )
            await approve_when_waiting(client, agent_id)
            print("pydantic ai agent:", await payer.result())
    finally:
        if server is not None:
            await server.stop()


if __name__ == "__main__":
    asyncio.run(main())
    # Leave without interpreter teardown: the Temporal SDK's Rust threads outlive the
    # event loop and can crash a finalizing interpreter (temporalio/sdk-python#300).
    sys.stdout.flush()
    os._exit(0)
