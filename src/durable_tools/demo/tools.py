"""Sample tools for the demo: a read-only lookup, a large export and an approved refund.

Run a worker for them with `durable-tools worker --tools durable_tools.demo.tools`.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any

from durable_tools.tools import ToolContext, ToolRegistry

__all__ = ["ORDERS", "issued_refunds", "registry"]

registry = ToolRegistry()
"""The demo's tools; `load_registry("durable_tools.demo.tools")` finds it by this name."""

ORDERS: dict[str, dict[str, Any]] = {
    "A-1001": {
        "order_id": "A-1001",
        "customer_id": "C-42",
        "item": "Espresso grinder",
        "amount_cents": 2599,
        "currency": "USD",
        "status": "delivered",
        "note": "customer reports the grinder arrived damaged",
    },
    "A-1002": {
        "order_id": "A-1002",
        "customer_id": "C-7",
        "item": "Milk frother",
        "amount_cents": 1899,
        "currency": "USD",
        "status": "shipped",
        "note": "",
    },
}

# The payment provider's ledger, keyed by idempotency key: a retried or replayed call
# finds its refund here and returns it instead of refunding twice.
_refunds: dict[str, dict[str, Any]] = {}
_refunds_lock = threading.Lock()


def issued_refunds() -> list[dict[str, Any]]:
    """Every refund issued by this process (what the demo's payment provider holds)."""
    with _refunds_lock:
        return list(_refunds.values())


@registry.tool(read_only=True, side_effect="none")
def lookup_order(order_id: str) -> dict[str, Any]:
    """Look up an order by its id: item, amount, status and notes.

    Args:
        order_id: The order id, like "A-1001".
    """
    order = ORDERS.get(order_id)
    if order is None:
        return {"order_id": order_id, "found": False}
    return {**order, "found": True}


@registry.tool(read_only=True, side_effect="none", heartbeat_timeout=10.0)
def export_report(customer_id: str, rows: int = 2000) -> dict[str, Any]:
    """Export a customer's order history as a report (large: it goes to the artifact store).

    Args:
        customer_id: The customer, like "C-42".
        rows: How many history lines to export (at most 5000).
    """
    rows = max(0, min(rows, 5000))
    lines = [
        {
            "line": i + 1,
            "customer_id": customer_id,
            "order_id": f"H-{i:05d}",
            "sku": f"SKU-{(i * 7919) % 10000:04d}",
            "amount_cents": 500 + (i * 37) % 9500,
            "status": ("delivered", "returned", "refunded", "shipped")[i % 4],
        }
        for i in range(rows)
    ]
    return {"customer_id": customer_id, "rows": rows, "lines": lines}


@registry.tool(idempotent=True, approval=True, spends_money=True, side_effect="external")
def issue_refund(order_id: str, amount_cents: int, ctx: ToolContext) -> dict[str, Any]:
    """Refund an order, in whole or in part. A person approves every refund first.

    Args:
        order_id: The order to refund.
        amount_cents: How much to refund, in cents; at most the order's amount.
    """
    order = ORDERS.get(order_id)
    if order is None:
        raise ValueError(f"no order {order_id!r}")
    if not 0 < amount_cents <= order["amount_cents"]:
        raise ValueError(
            f"amount_cents must be between 1 and {order['amount_cents']} for order {order_id}"
        )
    with _refunds_lock:
        existing = _refunds.get(ctx.idempotency_key)
        if existing is not None:
            return {**existing, "replayed": True}
        refund_id = "rf_" + hashlib.sha256(ctx.idempotency_key.encode()).hexdigest()[:12]
        refund = {
            "refund_id": refund_id,
            "order_id": order_id,
            "amount_cents": amount_cents,
            "currency": order["currency"],
            "status": "issued",
        }
        _refunds[ctx.idempotency_key] = refund
    return refund
