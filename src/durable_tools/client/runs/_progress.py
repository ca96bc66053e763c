"""Typed progress of a run's running tool calls, read from their heartbeat details, and of
its running sub-agents' calls (marked with the sub-agent's run id)."""

from __future__ import annotations

import asyncio
from typing import NamedTuple

from temporalio.client import Client, WorkflowExecutionDescription
from temporalio.service import RPCError

from durable_tools.tools._progress import Progress, parse_beat

__all__ = ["MAX_SUBAGENTS_READ", "MAX_SUBAGENT_DEPTH", "ToolProgress", "progress_in"]

MAX_SUBAGENT_DEPTH = 4
"""Levels of sub-agents whose progress a run's progress includes."""
MAX_SUBAGENTS_READ = 16
"""Running sub-agents of one run whose progress is read (each costs a `describe()`)."""
_AGENT_WORKFLOW = "AgentWorkflow"


class ToolProgress(NamedTuple):
    """The latest progress of one running tool call (from its heartbeat details)."""

    call_id: str
    tool: str
    progress: Progress
    recent: list[Progress]
    """The reports before `progress`, oldest first (bounded; without partial results)."""
    attempt: int = 1
    run_id: str | None = None
    """The sub-agent run the call runs in; None for a call of the run asked."""


async def progress_in(
    client: Client, description: WorkflowExecutionDescription, *, subagents: bool = True
) -> list[ToolProgress]:
    """The typed progress of the running tool calls in a run's `describe()` answer, then
    (with `subagents`) those of its running sub-agents, and theirs, each marked with the
    sub-agent's run id (`MAX_SUBAGENT_DEPTH` levels, `MAX_SUBAGENTS_READ` per run).

    Only calls that reported through `ToolContext.progress` are listed; local activities
    never heartbeat, so they never appear.
    """
    found = await _own_progress(client, description)
    if subagents:
        found += await _subagent_progress(client, description, MAX_SUBAGENT_DEPTH)
    return found


async def _subagent_progress(
    client: Client, description: WorkflowExecutionDescription, depth: int
) -> list[ToolProgress]:
    """The progress of the running agent children in `description`, `depth` levels down."""
    children = [
        child
        for child in description.raw_description.pending_children
        if child.workflow_type_name == _AGENT_WORKFLOW
    ][:MAX_SUBAGENTS_READ]
    if depth <= 0 or not children:
        return []

    async def of(workflow_id: str, run_id: str) -> list[ToolProgress]:
        try:
            described = await client.get_workflow_handle(workflow_id, run_id=run_id).describe()
        except RPCError:  # ended meanwhile, or not ours to read: nothing to show
            return []
        reports = await _own_progress(client, described)
        marked = [report._replace(run_id=workflow_id) for report in reports]
        return marked + await _subagent_progress(client, described, depth - 1)

    answers = await asyncio.gather(*(of(c.workflow_id, c.run_id) for c in children))
    return [report for answer in answers for report in answer]


async def _own_progress(
    client: Client, description: WorkflowExecutionDescription
) -> list[ToolProgress]:
    """The progress of the run's own running calls."""
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
