"""Typed progress of a run's running tool calls, read from their heartbeat details."""

from __future__ import annotations

from typing import NamedTuple

from temporalio.client import Client, WorkflowExecutionDescription

from durable_tools.tools._progress import Progress, parse_beat

__all__ = ["ToolProgress", "progress_in"]


class ToolProgress(NamedTuple):
    """The latest progress of one running tool call (from its heartbeat details)."""

    call_id: str
    tool: str
    progress: Progress
    recent: list[Progress]
    """The reports before `progress`, oldest first (bounded; without partial results)."""
    attempt: int = 1


async def progress_in(
    client: Client, description: WorkflowExecutionDescription
) -> list[ToolProgress]:
    """The typed progress of the running tool calls in a run's `describe()` answer.

    Only calls that reported through `ToolContext.progress` are listed; local activities
    never heartbeat, so they never appear.
    """
    found: list[ToolProgress] = []
    for pending in description.raw_description.pending_activities:
        if not pending.HasField("heartbeat_details") or not pending.heartbeat_details.payloads:
            continue
        try:
            decoded = await client.data_converter.decode(pending.heartbeat_details.payloads)
        except Exception:  # details of another form (another SDK, a codec we lack)
            continue
        beat = parse_beat(decoded[0]) if decoded else None
        if beat is None:
            continue
        found.append(
            ToolProgress(
                beat.call_id,
                beat.tool or pending.activity_type.name,
                beat.progress,
                beat.recent,
                pending.attempt or 1,
            )
        )
    return found
