"""What the framework integration tests share: the prefix of the runtime's handlers on the
host, and the approval-gated tool every framework's agent pays with."""

from __future__ import annotations

from durable_tools.tools import ToolRegistry

PREFIX = "tools_"
"""The handler prefix every test's `ToolRuntime` registers under."""


def pay_registry(ran: list[str]) -> ToolRegistry:
    """`pay(order_id)`, approved by a person; each run appends its order to `ran`."""
    registry = ToolRegistry()

    @registry.tool(approval=True, idempotent=True)
    def pay(order_id: str) -> str:
        """Pay an order's invoice (a person approves it)."""
        ran.append(order_id)
        return f"paid {order_id}"

    return registry
