"""A call that passed validation, and its timeline entry.

Every stage after validation (the gates, execution, recording) takes a `ValidCall`, so
none of them looks the tool up again or re-parses the arguments.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from durable_tools.messages import ToolCall
from durable_tools.protocol._records import ToolCallRecord
from durable_tools.tools import ToolSpec
from durable_tools.workflows.run._state import RunState

__all__ = ["ValidCall", "open_record"]


@dataclass(frozen=True)
class ValidCall:
    """A call that passed validation: its tool and its parsed, schema-valid arguments."""

    call: ToolCall
    spec: ToolSpec
    arguments: dict[str, Any]


def open_record(state: RunState, call: ToolCall, *, parent: str | None = None) -> ToolCallRecord:
    """Start the call's timeline entry (`parent`: the script call that made it)."""
    record = ToolCallRecord(
        call_id=call.id,
        tool=call.name[:64],
        turn=state.turn,
        arguments=call.arguments[:160],
        status="running",
        parent_call_id=parent,
    )
    state.timeline.append(record)
    state.records[call.id] = record
    return record
