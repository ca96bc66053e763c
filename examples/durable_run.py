"""Run an agent durably: a worker, a run that pauses for approval, an approval.

Uses the Temporal server at TEMPORAL_ADDRESS, or starts the embedded dev server.
Run it with `python examples/durable_run.py`.
"""

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path

from durable_tools import AgentConfig, DurableTools, ToolContext, ToolRegistry, build_worker
from durable_tools.server import ensure_server

registry = ToolRegistry()


@registry.tool(read_only=True)
def get_balance(account: str) -> int:
    """Balance of an account, in cents."""
    return 12_500


@registry.tool(approval=True, idempotent=True)
def pay(account: str, amount_cents: int, ctx: ToolContext) -> str:
    """Pay from an account. A person approves each payment."""
    # ctx.idempotency_key is the same on every retry: pass it to the payment API.
    return f"paid {amount_cents} from {account} (key {ctx.idempotency_key})"


# A scripted model stands in for an LLM; use model="openai:gpt-4o-mini" for a real one.
STEPS = [
    {"tool_calls": [{"id": "b1", "name": "get_balance", "arguments": {"account": "acc-1"}}]},
    {
        "tool_calls": [
            {"id": "p1", "name": "pay", "arguments": {"account": "acc-1", "amount_cents": 500}}
        ]
    },
    {"text": "Paid 5.00 from acc-1."},
]


async def main() -> None:
    client, server = await ensure_server()  # an existing server, or the embedded one
    script = Path(tempfile.mkdtemp()) / "steps.json"
    script.write_text(json.dumps({"steps": STEPS}))
    try:
        async with build_worker(client, registry, task_queue="example"):
            tools = DurableTools(client, task_queue="example")
            run = await tools.start(
                "Pay 5.00 from acc-1 if the balance allows it.",
                config=AgentConfig(name="payer", model=f"scripted:{script}"),
            )
            print("run:", run.run_id, run.ui_url)
            while not (status := await run.status()).pending_approvals:
                await asyncio.sleep(0.1)
            pending = status.pending_approvals[0]
            print("waiting for approval of:", pending.tool)
            # The hash binds the decision to exactly the arguments shown.
            await run.approve(
                "p1", decider="alice", reason="within budget", arguments_hash=pending.arguments_hash
            )
            result = await run.result()
            print("status:", result.status.value)
            print("answer:", result.final_answer)
    finally:
        if server is not None:
            await server.stop()


if __name__ == "__main__":
    asyncio.run(main())
    # Leave without interpreter teardown: the Temporal SDK's Rust threads outlive the
    # event loop and can crash a finalizing interpreter (temporalio/sdk-python#300).
    sys.stdout.flush()
    os._exit(0)
