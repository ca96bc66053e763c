"""The approvals a run's sub-agents wait for: what the run shows of them, and what a
sub-agent tells its parent.

A sub-agent started by a sub-agent tool (`calls/_execute._run_subagent`) gets the
parent's signal name in its input (`AgentInput.report_to`). Each time its run publishes
(`_visibility.publish`: every wait that opens or closes) it compares the approvals it
waits for, its own and those its own sub-agents told it, with what it last told its
parent, and when they differ sends the whole list (`SubagentNotice`) in the background.
The parent keeps the newest notice of each running sub-agent (`gates/_subagent_waits`)
and shows it as its own wait: `AgentStatus`, `PendingApprovals`, the UI's details, the
`status` query. Relayed this way a grandchild's wait reaches the root.

Only runs whose input names `report_to` send anything, so runs recorded before it replay
unchanged.
"""

from __future__ import annotations

import asyncio

from pydantic import ValidationError
from temporalio import workflow

from durable_tools.protocol._limits import MAX_DECIDER_CHARS, clip
from durable_tools.protocol._wait_types import (
    MAX_SUBAGENT_MORE,
    MAX_SUBAGENT_WAIT_DECIDERS,
    MAX_SUBAGENT_WAITS,
    PendingApproval,
    SubagentNotice,
    SubagentWait,
)
from durable_tools.workflows.run._state import RunState
from durable_tools.workflows.run._wait_maps import GateState

__all__ = ["relayed_count", "relayed_waits", "report_to_parent"]

_SUMMARY_CHARS = 300


def relayed_waits(gates: GateState) -> list[SubagentWait]:
    """The approvals the run's running sub-agents told it they wait for, in the order the
    sub-agents started."""
    return [wait for notice in gates.subagents.values() if notice for wait in notice.waits]


def relayed_count(gates: GateState) -> int:
    """How many approvals the run's running sub-agents wait for (listed or not)."""
    return sum(len(notice.waits) + notice.more for notice in gates.subagents.values() if notice)


def _as_wait(run_id: str, approval: PendingApproval) -> SubagentWait | None:
    """One of this run's own approvals as its parent shows it; None if it cannot be told
    within the notice's bounds (it is then only counted)."""
    try:
        return SubagentWait(
            run_id=run_id,
            call_id=approval.call_id,
            tool=approval.tool,
            tool_label=approval.tool_label,
            summary=clip(approval.summary, _SUMMARY_CHARS) if approval.summary else None,
            arguments_hash=approval.arguments_hash,
            requested_at=approval.requested_at,
            # More than the bound (or a name too long): not told, so shown to nobody
            # rather than to anyone (an empty list).
            deciders=approval.deciders
            if len(approval.deciders) <= MAX_SUBAGENT_WAIT_DECIDERS
            and all(len(name) <= MAX_DECIDER_CHARS for name in approval.deciders)
            else None,
        )
    except ValidationError:
        return None


def report_to_parent(state: RunState) -> None:
    """Tell the parent what this run and its sub-agents wait for, when it changed since
    the last notice (a sub-agent started by a sub-agent tool only)."""
    signal = state.input.report_to
    parent = workflow.info().parent
    if signal is None or parent is None:
        return
    run_id = workflow.info().workflow_id
    own = [_as_wait(run_id, approval) for approval in state.gates.approvals.pending.values()]
    relayed = relayed_waits(state.gates)
    every = [wait for wait in own if wait is not None] + relayed
    listed = every[:MAX_SUBAGENT_WAITS]
    # Counted, not listed: own waits that could not be told, those past the bound, and
    # those the sub-agents themselves only counted.
    more = len(own) + len(relayed) - len(listed) + relayed_count(state.gates) - len(relayed)
    seq = state.gates.report.next_seq(
        (tuple((w.run_id, w.call_id, w.arguments_hash) for w in listed), more)
    )
    if seq is None:
        return
    notice = SubagentNotice(
        child_id=run_id,
        sent_at=workflow.now(),
        seq=seq,
        waits=listed,
        more=min(more, MAX_SUBAGENT_MORE),
        token=state.input.report_token,
    )
    # By workflow id only: the notice reaches the parent's current run.
    handle = workflow.get_external_workflow_handle(parent.workflow_id)
    task = asyncio.create_task(_send(handle, signal, notice))
    state.notifying.add(task)
    task.add_done_callback(state.notifying.discard)


async def _send(
    handle: workflow.ExternalWorkflowHandle[object], signal: str, notice: SubagentNotice
) -> None:
    try:
        await handle.signal(signal, notice)
    except Exception:  # the parent ended or is gone: nobody to tell
        workflow.logger.info("sub-agent notice not delivered to %s", handle.id)
