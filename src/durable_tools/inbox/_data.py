"""What the inbox shows, read through the client API: pending approvals across runs, a
call with its context, a run with its timeline."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import datetime

from durable_tools.client import AgentRun, DurableTools, RunSummary
from durable_tools.messages import Message
from durable_tools.server import ui_url
from durable_tools.tools import ToolRegistry
from durable_tools.tools._spec import ToolSpec
from durable_tools.workflows import PendingApproval, RunEvent, RunSnapshot, ToolCallRecord

__all__ = [
    "CallView",
    "PendingItem",
    "PendingList",
    "RunView",
    "find_call",
    "list_pending",
    "load_run",
]

QUERY_TIMEOUT = 10.0
"""Seconds a run (its worker) has to answer a query before the inbox gives up on it."""


@dataclass(frozen=True)
class PendingItem:
    """One call waiting on a person, in the run that waits for it."""

    run_id: str
    agent: str | None
    approval: PendingApproval

    @property
    def requested_at(self) -> datetime:
        """When the approval was asked for."""
        return self.approval.requested_at


@dataclass
class PendingList:
    """Pending approvals, newest first, and the runs that did not answer."""

    items: list[PendingItem] = field(default_factory=list)
    unreachable: list[str] = field(default_factory=list)


async def _approvals_of(run: AgentRun) -> list[tuple[str, PendingApproval]]:
    return await asyncio.wait_for(run.pending_approvals(), QUERY_TIMEOUT)


async def list_pending(
    tools: DurableTools,
    *,
    agent: str | None = None,
    tool: str | None = None,
    decider: str | None = None,
) -> PendingList:
    """Every approval pending across runs (found through the search attributes).

    Args:
        tools: The client.
        agent: Only runs of this agent.
        tool: Only calls of this tool.
        decider: Only calls this name may decide (named, or anyone may).
    """
    summaries: list[RunSummary] = await tools.pending()
    if agent:
        summaries = [s for s in summaries if s.agent == agent]
    agents = {s.run_id: s.agent for s in summaries}
    answers = await asyncio.gather(
        *(_approvals_of(tools.run(s.run_id)) for s in summaries), return_exceptions=True
    )
    result = PendingList()
    seen: set[tuple[str, str]] = set()
    for summary, answer in zip(summaries, answers, strict=True):
        if isinstance(answer, BaseException):
            result.unreachable.append(summary.run_id)
            continue
        for run_id, approval in answer:
            if (run_id, approval.call_id) in seen:
                continue  # a sub-agent's call, listed through its parent and itself
            seen.add((run_id, approval.call_id))
            if tool and approval.tool != tool:
                continue
            if decider and approval.deciders and decider not in approval.deciders:
                continue
            result.items.append(PendingItem(run_id, agents.get(run_id, summary.agent), approval))
    result.items.sort(key=lambda item: item.requested_at, reverse=True)
    return result


@dataclass(frozen=True)
class CallView:
    """Everything the call page shows."""

    run_id: str
    approval: PendingApproval
    snapshot: RunSnapshot
    prompt: str | None
    recent: list[Message]
    trail: list[RunEvent]
    spec: ToolSpec | None


async def find_call(
    tools: DurableTools, run_id: str, call_id: str, registry: ToolRegistry | None
) -> CallView | None:
    """The pending approval of `call_id` in run `run_id` with its context, or None."""
    run = tools.run(run_id)
    snapshot = await asyncio.wait_for(run.status(), QUERY_TIMEOUT)
    approval = next((a for a in snapshot.pending_approvals if a.call_id == call_id), None)
    if approval is None:
        return None
    conversation, events = await asyncio.gather(
        asyncio.wait_for(run.conversation(), QUERY_TIMEOUT),
        asyncio.wait_for(run.events(), QUERY_TIMEOUT),
    )
    prompt = next((m.content for m in conversation if m.role == "user"), None)
    spec = None
    if registry is not None and approval.tool in registry.names():
        spec = registry.get(approval.tool).spec
    return CallView(
        run_id=run_id,
        approval=approval,
        snapshot=snapshot,
        prompt=prompt,
        recent=conversation[-8:],
        trail=[e for e in events if e.call_id == call_id],
        spec=spec,
    )


@dataclass(frozen=True)
class RunView:
    """Everything the run page shows."""

    run_id: str
    snapshot: RunSnapshot
    timeline: list[ToolCallRecord]
    events: list[RunEvent]
    ui_url: str


async def load_run(tools: DurableTools, run_id: str, ui_base: str | None) -> RunView:
    """A run's status, timeline with deciders, and events."""
    run = tools.run(run_id)
    snapshot, timeline, events = await asyncio.gather(
        asyncio.wait_for(run.status(), QUERY_TIMEOUT),
        asyncio.wait_for(run.timeline(), QUERY_TIMEOUT),
        asyncio.wait_for(run.events(), QUERY_TIMEOUT),
    )
    return RunView(
        run_id=run_id,
        snapshot=snapshot,
        timeline=await run.decided_timeline(timeline),
        events=events,
        ui_url=ui_url(tools.client.namespace, run_id, base=ui_base),
    )
