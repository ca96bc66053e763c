"""The workflows of the framework crash test (test_framework_crash.py), shared by the test
and its worker processes (framework_worker.py): a Pydantic AI agent that pays one order
through durable-tools' runtime, and the tool whose effect is counted in a file."""

from __future__ import annotations

import json
import os
from pathlib import Path

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from pydantic_ai import Agent
    from pydantic_ai.durable_exec.temporal import TemporalDurability
    from pydantic_ai.models.function import FunctionModel

    from durable_tools.integrations.pydantic_ai import DurableToolset
    from durable_tools.tools import ToolContext, ToolRegistry
    from durable_tools.workflows import ToolRuntime
    from framework_support import PREFIX, call_then_report

EFFECTS = "effects.jsonl"
"""Under the work directory: one line per payment the tool made."""


def effect_registry(work: Path) -> ToolRegistry:
    """`pay(order_id)`, approved by a person; each run appends a line to `work/EFFECTS`."""
    registry = ToolRegistry()

    @registry.tool(approval=True, idempotent=True)
    def pay(order_id: str, ctx: ToolContext) -> str:
        """Pay an order's invoice (a person approves it)."""
        line = {"order_id": order_id, "key": ctx.idempotency_key, "pid": os.getpid()}
        with open(work / EFFECTS, "a") as handle:
            handle.write(json.dumps(line) + "\n")
        return f"paid {order_id}"

    return registry


crash_payer = Agent(
    FunctionModel(call_then_report("pay", {"order_id": "A1"}, "p1")),
    name="crash_payer",
    capabilities=[TemporalDurability()],
)


@workflow.defn(sandboxed=True)
class CrashPayerWorkflow:
    """A user's workflow running a Pydantic AI agent whose tools are durable-tools'."""

    @workflow.init
    def __init__(self, prompt: str) -> None:
        self.tools = ToolRuntime(prefix=PREFIX)

    @workflow.run
    async def run(self, prompt: str) -> str:
        result = await crash_payer.run(prompt, toolsets=[DurableToolset(self.tools)])
        return str(result.output)
