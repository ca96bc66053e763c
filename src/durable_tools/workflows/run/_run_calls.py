"""What a run's tool calls hold between their stages: the call ids used, each call's
idempotency key, the tasks running, the current turn's records, per-tool budgets.

Data only, so that `_state` can hold it and the gates and observers below `calls/` can
read it; only `workflows/calls/` changes it (`bench.state_use` counts assignments made
anywhere else). The ids used and the budgets are carried over continue-as-new (as the
`CarriedState` fields `call_uses`, `call_ids_dropped` and `budget_used`, see `_carry`);
the rest lives in one history.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from durable_tools.protocol._options import ToolActivityOptions
from durable_tools.protocol._records import ToolCallRecord

__all__ = ["RunCalls"]


@dataclass
class RunCalls:
    """The tool calls' state of one run."""

    uses: dict[str, int] = field(default_factory=dict)
    """How often each call id was used: a model that reuses ids across turns must not give
    two different calls one idempotency key (or one approval)."""
    ids_dropped: bool = False
    """An earlier run of the chain stopped carrying `uses` (`CALL_IDS_CARRIED`)."""
    budget_used: dict[str, int] = field(default_factory=dict)
    """Calls made of each tool with a `max_calls_per_run` budget (see `calls/_validate`)."""

    # Not carried: empty between turns, or rebuilt.
    in_turn: bool = False
    """True while the tool calls of a turn run (a steer then arrives "mid-turn")."""
    keys: dict[str, str] = field(default_factory=dict)
    """Idempotency key of each call id of the current turn."""
    running: dict[str, asyncio.Task[Any]] = field(default_factory=dict)
    """The task of each call whose route runs now (a cancel reaches them)."""
    records: dict[str, ToolCallRecord] = field(default_factory=dict)
    """Timeline records of the current turn's calls, by call id."""
    options: dict[str, ToolActivityOptions] = field(default_factory=dict)
    """The activity options of each tool called so far, built once per tool."""
