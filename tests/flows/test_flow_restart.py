"""A flow survives its worker: a new worker resumes it from history, and a node that
completed before the restart is not run again."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from temporalio.client import Client

from durable_tools import AgentConfig, DurableTools, RunStatus, ToolRegistry
from durable_tools.flows import FlowNode
from support import answer, assert_not_wedged, calls, running_worker, write_script


@pytest.mark.slow
async def test_a_worker_lost_mid_flow_resumes_without_rerunning_a_completed_node(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    ran: list[str] = []
    started = asyncio.Event()
    release = asyncio.Event()
    registry = ToolRegistry()

    @registry.tool(idempotent=True)
    def charge(amount: float) -> str:
        """A side effect that must happen once."""
        ran.append("charge")
        return f"charged {amount}"

    @registry.tool(read_only=True)
    async def confirm(receipt: str) -> str:
        """Waits until the test lets it finish."""
        ran.append("confirm")
        started.set()
        await release.wait()
        return f"confirmed: {receipt}"

    registry.flow(
        "pay",
        "Charge, then confirm.",
        nodes={
            "charge": FlowNode(tool="charge", arguments={"amount": "$args.amount"}),
            "confirm": FlowNode(tool="confirm", arguments={"receipt": "$nodes.charge.output"}),
        },
    )
    model = write_script(tmp_path, [calls(("c1", "pay", {"amount": 12.5})), answer("paid")])
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start(
            "pay", config=AgentConfig(model=model), run_id=f"restart-{task_queue}"
        )
        await asyncio.wait_for(started.wait(), timeout=30)
    # The first worker is gone mid-flow, its `confirm` attempt cut off. A fresh worker,
    # caching nothing, rebuilds both workflows from their histories alone.
    release.set()
    async with running_worker(client, registry, task_queue, max_cached_workflows=0):
        result = await run.result()
        assert result.status == RunStatus.COMPLETED, result.reason
        [message] = [m for m in await run.conversation() if m.role == "tool"]
        assert message.content == "confirmed: charged 12.5"
        for handle in (run.handle, client.get_workflow_handle(f"{run.run_id}.c1")):
            await assert_not_wedged(handle)
    assert ran.count("charge") == 1
    assert ran.count("confirm") == 2
