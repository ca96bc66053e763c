"""An OpenAI Agents SDK agent, under Temporal's plugin, whose tools are durable-tools'.

The agent pays through a tool that waits for a person's approval, inside its run, and is
approved through the host's prefixed handlers (`AgentRun(..., prefix=)`, or
`durable-tools approve HOST CALL --hash H --prefix tools_`, or the web inbox,
`durable-tools serve`, which lists the waiting call with the agent runs' and finds the
prefix itself).

Uses the Temporal server at TEMPORAL_ADDRESS, or starts the embedded dev server.
Run it with `python examples/openai_agents.py` (needs the `openai-agents` extra).
"""

import asyncio
import os
import sys
import uuid

from temporalio import workflow
from temporalio.client import Client
from temporalio.converter import DataConverter

from durable_tools.client import AgentRun
from durable_tools.server import ensure_server
from durable_tools.tools import ToolRegistry
from durable_tools.worker import build_worker

# --8<-- [start:imports]
with workflow.unsafe.imports_passed_through():
    from agents import Agent, Model, ModelResponse, Runner
    from temporalio.openai_agents import OpenAIAgentsPlugin
    from temporalio.openai_agents.testing import ResponseBuilders, TestModelProvider

    from durable_tools.integrations.openai_agents import durable_function_tools
    from durable_tools.workflows import ToolRuntime
# --8<-- [end:imports]

registry = ToolRegistry()


@registry.tool(approval=True, idempotent=True)
def pay_invoice(invoice: str, amount_cents: int) -> str:
    """Pay an invoice. A person approves each payment."""
    return f"paid {amount_cents} on {invoice}"


class StandInModel(Model):
    """A stand-in for an LLM: pays INV-9, then says what the tool said."""

    async def get_response(
        self, system_instructions: object, input: object, *args: object, **kwargs: object
    ) -> ModelResponse:
        said = [i["output"] for i in input if isinstance(i, dict) and "output" in i]  # type: ignore[attr-defined]
        if said:
            return ResponseBuilders.output_message(f"Done: {said[0]}")
        return ResponseBuilders.tool_call(
            '{"invoice": "INV-9", "amount_cents": 120}', "pay_invoice"
        )

    def stream_response(self, *args: object, **kwargs: object) -> None:
        raise NotImplementedError


# --8<-- [start:agent]
@workflow.defn
class OpenAIPayerWorkflow:
    """An OpenAI Agents SDK agent whose tools are durable-tools' (approvals wait in its run)."""

    @workflow.init
    def __init__(self, prompt: str) -> None:
        self.tools = ToolRuntime(prefix="tools_")

    @workflow.run
    async def run(self, prompt: str) -> str:
        agent = Agent(name="payer", tools=await durable_function_tools(self.tools))
        result = await Runner.run(agent, prompt)
        return str(result.final_output)


# --8<-- [end:agent]


async def main() -> None:
    started, server = await ensure_server()  # an existing server, or the embedded one
    try:
        # --8<-- [start:worker]
        client = Client(  # the plugin sets its own payload converter (pydantic's JSON)
            started.service_client,
            namespace=started.namespace,
            data_converter=DataConverter(),
            plugins=[OpenAIAgentsPlugin(model_provider=TestModelProvider(StandInModel()))],
        )
        worker = build_worker(
            client, registry, task_queue="openai-agents", workflows=[OpenAIPayerWorkflow]
        )
        # --8<-- [end:worker]
        async with worker:
            host_id = f"openai-payer-{uuid.uuid4()}"
            payer = await client.start_workflow(
                OpenAIPayerWorkflow.run, "pay INV-9", id=host_id, task_queue="openai-agents"
            )
            run = AgentRun(started, host_id, prefix="tools_")
            status = await run.status()
            while not status.pending_approvals:  # until the call waits for a person
                await asyncio.sleep(0.1)
                status = await run.status()
            pending = status.pending_approvals[0]
            await run.decide_request(
                pending.call_id, True, arguments_hash=pending.arguments_hash, decider="alice"
            )
            print("openai agents agent:", await payer.result())
    finally:
        if server is not None:
            await server.stop()


if __name__ == "__main__":
    asyncio.run(main())
    # Leave without interpreter teardown: the Temporal SDK's Rust threads outlive the
    # event loop and can crash a finalizing interpreter (temporalio/sdk-python#300).
    sys.stdout.flush()
    os._exit(0)
