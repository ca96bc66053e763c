"""Tools, script steps and checks shared by the approval-policy tests."""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.client import WorkflowUpdateFailedError

from durable_tools import AgentRun, Identity, ToolRegistry
from durable_tools.workflows import RunSnapshot
from support import calls

ALICE = Identity(tenant="acme", user="alice")


def registry(executed: list[Any]) -> ToolRegistry:
    tools = ToolRegistry()

    @tools.tool(approval=True, idempotent=True)
    def refund(order_id: str, amount_cents: int) -> str:
        """Refund an order."""
        executed.append(("refund", amount_cents))
        return "refunded"

    @tools.tool(approval=True, spends_money=True, idempotent=True)
    def pay(amount_cents: int) -> str:
        """Pay a supplier."""
        executed.append(("pay", amount_cents))
        return "paid"

    return tools


def pay(call_id: str, amount: int) -> dict[str, Any]:
    return calls((call_id, "pay", {"amount_cents": amount}))


def refund(call_id: str, amount: int) -> dict[str, Any]:
    return calls((call_id, "refund", {"order_id": call_id, "amount_cents": amount}))


def pending(snapshot: RunSnapshot) -> dict[str, Any]:
    return {p.call_id: p for p in snapshot.pending_approvals}


async def rejected(update: Any, text: str) -> None:
    with pytest.raises(WorkflowUpdateFailedError) as failure:
        await update
    assert text in str(failure.value.cause)


async def events(run: AgentRun, name: str) -> list[str]:
    return [e.detail or "" for e in await run.events() if e.event == name]
