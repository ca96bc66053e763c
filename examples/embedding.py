"""An agent inside your own workflow: as a child run (`run_agent`) or embedded (`AgentLoop`).

Uses the Temporal server at TEMPORAL_ADDRESS, or starts the embedded dev server.
Run it with `python examples/embedding.py`.
"""

import asyncio
import json
import os
import sys
import tempfile
import uuid
from pathlib import Path

from temporalio import workflow

from durable_tools import AgentRun, ToolRegistry, build_worker
from durable_tools.server import ensure_server

# --8<-- [start:imports]
with workflow.unsafe.imports_passed_through():
    from durable_tools import AgentConfig
    from durable_tools.workflows import AgentInput, AgentLoop, run_agent
# --8<-- [end:imports]

registry = ToolRegistry()


@registry.tool(read_only=True)
def lookup_order(order_id: str) -> dict[str, object]:
    """An order's item, amount and status."""
    return {"order_id": order_id, "item": "grinder", "amount_cents": 2599, "status": "damaged"}


@registry.tool(approval=True, idempotent=True)
def refund(order_id: str, amount_cents: int) -> str:
    """Refund an order. A person approves each refund."""
    return f"refunded {amount_cents} on {order_id}"


# --8<-- [start:child]
@workflow.defn
class OrderWorkflow:
    @workflow.run
    async def run(self, order_id: str, model: str) -> str:
        config = AgentConfig(model=model, tools=["lookup_order", "refund"])
        result = await run_agent(f"Resolve the complaint on {order_id}", config=config)
        return result.final_answer or result.reason or ""


# --8<-- [end:child]


# --8<-- [start:embedded]
@workflow.defn
class OrderDeskWorkflow:
    @workflow.init
    def __init__(self, input: AgentInput) -> None:
        self.agent = AgentLoop(input)
        self.agent.register_handlers(prefix="agent_")

    @workflow.run
    async def run(self, input: AgentInput) -> str:
        result = await self.agent.run()
        return result.final_answer or ""


# --8<-- [end:embedded]


def scripted(*steps: dict[str, object]) -> str:
    """A scripted model standing in for an LLM: its model spec."""
    path = Path(tempfile.mkdtemp()) / "steps.json"
    path.write_text(json.dumps({"steps": list(steps)}))
    return f"scripted:{path}"


async def main() -> None:
    client, server = await ensure_server()  # an existing server, or the embedded one
    lookup = {"id": "l1", "name": "lookup_order", "arguments": {"order_id": "A-1"}}
    refund_call = {
        "id": "r1",
        "name": "refund",
        "arguments": {"order_id": "A-1", "amount_cents": 2599},
    }
    try:
        # --8<-- [start:worker]
        worker = build_worker(
            client, registry, task_queue="agents", workflows=[OrderWorkflow, OrderDeskWorkflow]
        )
        # --8<-- [end:worker]
        async with worker:
            # The child way: the agent is a run of its own, `<host id>.agent-1`.
            model = scripted({"tool_calls": [lookup]}, {"text": "The grinder arrived damaged."})
            answer = await client.execute_workflow(
                OrderWorkflow.run,
                args=["A-1", model],
                id=f"order-{uuid.uuid4()}",
                task_queue="agents",
            )
            print("child agent:", answer)

            # The embedded way: the agent's handlers are the host's, under the prefix.
            model = scripted({"tool_calls": [refund_call]}, {"text": "Refunded 25.99."})
            config = AgentConfig(model=model, tools=["lookup_order", "refund"])
            host_id = f"desk-{uuid.uuid4()}"
            await client.start_workflow(
                OrderDeskWorkflow.run,
                AgentInput(prompt="Refund A-1", config=config),
                id=host_id,
                task_queue="agents",
            )
            # --8<-- [start:client]
            run = AgentRun(client, host_id, prefix="agent_")
            status = await run.status()
            while not status.pending_approvals:  # until the model's refund call waits
                await asyncio.sleep(0.1)
                status = await run.status()
            await run.steer("also thank the customer")
            pending = status.pending_approvals[0]
            await run.approve(
                pending.call_id, decider="alice", arguments_hash=pending.arguments_hash
            )
            # --8<-- [end:client]
            print("embedded agent:", await client.get_workflow_handle(host_id).result())
    finally:
        if server is not None:
            await server.stop()


if __name__ == "__main__":
    asyncio.run(main())
    # Leave without interpreter teardown: the Temporal SDK's Rust threads outlive the
    # event loop and can crash a finalizing interpreter (temporalio/sdk-python#300).
    sys.stdout.flush()
    os._exit(0)
