"""What the audit stream says about a tool call: its transport and its bounded details."""

from __future__ import annotations

import json
from typing import Any

from durable_tools.tools._spec import ToolSpec, Transport

__all__ = ["MAX_DETAILS_BYTES", "bounded_details", "transport_of"]

MAX_DETAILS_BYTES = 2_000
"""Largest structured value (as JSON) kept as `details` in the timeline and the events.

Both are carried over continue-as-new (up to 500 entries each), so a bigger value would
crowd the carried input; it stays available in the tool's artifacts when it was stored."""


def transport_of(spec: ToolSpec) -> Transport:
    """How calls to the tool travel (the spec's catalog metadata, set by its source)."""
    return "sub-agent" if spec.subagent is not None else spec.transport


def bounded_details(value: Any) -> Any:
    """`value` when its JSON fits `MAX_DETAILS_BYTES`, else None."""
    if value is None:
        return None
    try:
        size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    except (TypeError, ValueError):
        return None
    return value if size <= MAX_DETAILS_BYTES else None
