"""Who decided each approval, read back from a run's `approval.*` events (for older runs)."""

from __future__ import annotations

import re

from durable_tools.workflows import RunEvent, ToolCallRecord

__all__ = ["with_decisions"]

_DECIDED = re.compile(r"(approved|denied) by (.*?)(?:: (.*))?", re.DOTALL)


def with_decisions(timeline: list[ToolCallRecord], events: list[RunEvent]) -> list[ToolCallRecord]:
    """Fill `decided_by`, `decided_at` and `decision_reason` from a run's events.

    Records that already carry a decider are kept. A call id asked about as often as it
    appears in the timeline pairs its decisions with its records in order; when a reused
    id makes the pairing ambiguous, its records are left as they are rather than guessed.
    """
    requested: dict[str, int] = {}
    outcomes: dict[str, list[tuple[str, RunEvent, str | None]]] = {}
    for event in events:
        if event.call_id is None:
            continue
        if event.event == "approval.requested":
            requested[event.call_id] = requested.get(event.call_id, 0) + 1
        elif event.event == "approval.decided":
            match = _DECIDED.fullmatch(event.detail or "")
            if match:
                entry = (match.group(2), event, match.group(3))
                outcomes.setdefault(event.call_id, []).append(entry)
        elif event.event == "approval.expired":
            entry = ("deadline", event, "no decision before the deadline")
            outcomes.setdefault(event.call_id, []).append(entry)
    by_call: dict[str, list[int]] = {}
    for index, record in enumerate(timeline):
        by_call.setdefault(record.call_id, []).append(index)
    filled = list(timeline)
    for call_id, indexes in by_call.items():
        if requested.get(call_id, 0) != len(indexes):
            continue
        for index, (decider, event, reason) in zip(
            indexes, outcomes.get(call_id, []), strict=False
        ):
            if filled[index].decided_by is None:
                filled[index] = filled[index].model_copy(
                    update={
                        "decided_by": decider,
                        "decided_at": event.at,
                        "decision_reason": reason,
                    }
                )
    return filled
