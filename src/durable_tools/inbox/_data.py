"""What the inbox shows of one run, read through the client API: a call with its context,
a run with its timeline (the pending list across runs is `_pending`)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from durable_tools.client import DurableTools
from durable_tools.messages import Message
from durable_tools.server import ui_url
from durable_tools.tools import ToolRegistry
from durable_tools.tools._spec import ToolSpec
from durable_tools.workflows import PendingApproval, RunEvent, RunSnapshot, ToolCallRecord

from ._pending import QUERY_TIMEOUT

__all__ = ["CallView", "RunView", "find_call", "load_run"]


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
