"""A tools module (for `--tools confirm_tools`): `drop_table` requires confirmation, and
declares nothing else about approval."""

from __future__ import annotations

from durable_tools import ToolRegistry

dropped: list[str] = []

registry = ToolRegistry()


@registry.tool(requires_confirmation=True, idempotent=True, safety_notes="Data is gone for good.")
def drop_table(table: str) -> str:
    """Drop a database table."""
    dropped.append(table)
    return f"dropped {table}"
