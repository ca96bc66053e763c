"""What is seen of a run from outside: by operators (search attributes and the UI's current
details, kept in step by `publish`) and by its parent run (the approvals it waits for).

The approvals a run's sub-agents wait for are shown as the run's own, and a sub-agent tells
its parent what it waits for. A sub-agent started by a sub-agent tool
(`calls/_execute._run_subagent`) gets the parent's signal name in its input
(`AgentInput.report_to`). Each time its run publishes (every wait that opens or closes) it
compares the approvals it waits for, its own and those its own sub-agents told it, with what
it last told its parent, and when they differ sends the whole list (`SubagentNotice`) in the
background. The parent keeps the newest notice of each running sub-agent
(`gates/_subagent_waits`) and shows it as its own wait: `AgentStatus`, `PendingApprovals`,
the UI's details, the `status` query. Relayed this way a grandchild's wait reaches the root.
Only runs whose input names `report_to` send anything, so runs recorded before it replay
unchanged.
"""

from __future__ import annotations

import asyncio
import re
import shlex
import sys
from typing import Any

from pydantic import ValidationError
from temporalio import workflow
from temporalio.common import SearchAttributeUpdate

from durable_tools import search_attributes as sa
from durable_tools.policy._decide import describe_policy
from durable_tools.protocol._callback_types import PendingCallback
from durable_tools.protocol._input_types import PendingInput
from durable_tools.protocol._invisible import show_invisible
from durable_tools.protocol._limits import MAX_DECIDER_CHARS, MAX_REASON_CHARS, clip
from durable_tools.protocol._policy_types import ApprovalPolicy
from durable_tools.protocol._resume import answer_command
from durable_tools.protocol._run_io import REVISION_SHORT_START
from durable_tools.protocol._types import AgentConfig, RunStatus
from durable_tools.protocol._wait_types import (
    MAX_SUBAGENT_MORE,
    MAX_SUBAGENT_WAIT_DECIDERS,
    MAX_SUBAGENT_WAITS,
    PendingApproval,
    PendingAuthorization,
    SubagentNotice,
    SubagentWait,
)
from durable_tools.workflows.run._state import RunState
from durable_tools.workflows.run._wait_maps import GateState

__all__ = ["FINAL", "evicting", "publish", "relayed_count", "relayed_waits", "report_to_parent"]

FINAL = frozenset(
    {RunStatus.COMPLETED, RunStatus.LIMIT_REACHED, RunStatus.FAILED, RunStatus.CANCELLED}
)


def _current_status(state: RunState) -> RunStatus:
    if state.status in FINAL:
        return state.status
    for waits in state.gates.every:
        if waits.shown and waits.pending:
            return waits.kind.status
        if waits is state.gates.approvals and relayed_count(state.gates):
            return RunStatus.AWAITING_APPROVAL  # a sub-agent's approval is the run's too
    if state.session is not None and not state.session.busy:
        return RunStatus.AWAITING_MESSAGE
    return RunStatus.RUNNING


def _awaiting_tool(gates: GateState) -> str:
    """The tool of the first call waiting, of the first kind that has one shown (a
    sub-agent's approval after the run's own)."""
    for waits in gates.every:
        if waits.shown:
            for pending in waits.pending.values():
                tool: str = pending.tool
                return tool
        if waits is gates.approvals:
            for relayed in relayed_waits(gates):
                return relayed.tool
    return ""


def publish(state: RunState, doing: str | None = None) -> None:
    """Keep search attributes and the UI's current details in step with the run.

    Search attributes are upserted only when their values change: each upsert is a
    command in history.
    """
    state.status = _current_status(state)
    awaiting = _awaiting_tool(state.gates)
    approvals = len(state.gates.approvals.pending) + relayed_count(state.gates)
    values = (state.status.value, approvals, awaiting)
    if (
        state.published is None
        and state.input.revision >= REVISION_SHORT_START
        and not state.catalog.started_by_older_worker
    ):
        state.published = _started_with(state.config)
    if values != state.published:
        state.published = values
        updates: list[SearchAttributeUpdate[Any]] = [
            sa.AGENT_STATUS.value_set(state.status.value),
            sa.AGENT_NAME.value_set(state.config.name),
            sa.PENDING_APPROVALS.value_set(approvals),
            sa.AWAITING_TOOL.value_set(awaiting),
        ]
        # Tokens ride along in the same command (no extra event), and only on runs that
        # started with the attribute: the client sets it when the namespace registers it.
        if workflow.info().typed_search_attributes.get(sa.TOKENS) is not None:
            usage = state.model.usage
            updates.append(sa.TOKENS.value_set(usage.input_tokens + usage.output_tokens))
        workflow.upsert_search_attributes(updates)
    workflow.set_current_details(_details(state, doing))
    report_to_parent(state)


def _started_with(config: AgentConfig) -> tuple[str, int, str] | None:
    """The values the run's start event already holds, if it holds all of them.

    `DurableTools.start` sets every attribute `publish` writes, so a run it started need
    not upsert until something changes. Called before the run's first upsert, while
    `workflow.info()` still shows the start event's attributes, and only for runs whose
    input says a current client started them (`AgentInput.revision`): runs started
    otherwise (older clients, `temporal workflow start`, sub-agents, continued runs, whose
    start attributes are their predecessor's) upsert as before, on replay too.
    """
    started = workflow.info().typed_search_attributes
    status = started.get(sa.AGENT_STATUS)
    pending = started.get(sa.PENDING_APPROVALS)
    awaiting = started.get(sa.AWAITING_TOOL)
    if status is None or pending is None or awaiting is None:
        return None
    if started.get(sa.AGENT_NAME) != config.name:
        return None
    return (status, pending, awaiting)


_DEFAULT_POLICY = ApprovalPolicy()


def _details(state: RunState, doing: str | None) -> str:
    run_id = workflow.info().workflow_id
    lines = [f"**{state.status.value}** · turn {state.turn} · {state.tool_calls} tool calls"]
    if state.gates.policy != _DEFAULT_POLICY:
        lines.append(f"approval policy: {describe_policy(state.gates.policy)}")
    for waits in state.gates.every:
        lines.extend(
            _how_to_resume(run_id, pending, state.handler_prefix)
            for pending in waits.pending.values()
        )
        if waits is state.gates.approvals:
            lines.extend(
                _how_to_resume(run_id, relayed, state.handler_prefix)
                for relayed in relayed_waits(state.gates)
            )
    session = state.session
    if state.status is RunStatus.AWAITING_MESSAGE and session and session.idle_deadline:
        lines.append(
            f"- waiting for the next message until {session.idle_deadline:%Y-%m-%d %H:%M:%S} "
            f'UTC: `durable-tools send {_word(run_id)} "..."`, or '
            f"`durable-tools close {_word(run_id)}`"
        )
    if doing:
        lines.append(doing)
    if state.reason:
        # In a code span: whoever cancels or closes writes it, and it must not make a link.
        lines.append(f"reason: `{_unticked(clip(state.reason, MAX_REASON_CHARS))}`")
    return "\n".join(lines)


def _how_to_resume(run_id: str, pending: object, prefix: str = "") -> str:
    """One line of the UI's details: what a waiting call waits for, and how to answer.

    `prefix`: the handler prefix of a host that is not an agent workflow (an embedded
    loop, a tool runtime): its commands need `--prefix`."""
    if isinstance(pending, PendingApproval | SubagentWait):
        on = f" --prefix {_word(prefix)}" if prefix else ""
        # In a code span: the details are markdown, and a summary must not make a link.
        said = f" `{_unticked(pending.summary)}`" if pending.summary else ""
        # A sub-agent's is decided through this run too: the decision finds the sub-agent.
        who = (
            f"sub-agent run `{_unticked(pending.run_id)}` waits"
            if isinstance(pending, SubagentWait)
            else "waiting"
        )
        return (
            f"- {who} for approval of `{_unticked(pending.tool)}` "
            f"(call `{_unticked(pending.call_id)}`){said}: `durable-tools approve "
            f"{_word(run_id)} {_word(pending.call_id)} --hash "
            f"{_word(pending.arguments_hash)}{on}` or `durable-tools deny ...`"
        )
    if isinstance(pending, PendingAuthorization):
        return (
            f"- waiting for {pending.provider} authorization for `{pending.tool}` (call "
            f"`{_unticked(pending.call_id)}`): the user opens {pending.authorization_url}"
        )
    if isinstance(pending, PendingInput):
        return (
            f"- waiting for the user to answer the question of `{pending.tool}` (call "
            f"`{_unticked(pending.call_id)}`): "
            f"`{answer_command(run_id, pending.call_id, word=_word)} | --decline | --cancel`"
        )
    assert isinstance(pending, PendingCallback)
    return (
        f"- waiting for a client to run `{pending.tool}` (call `{_unticked(pending.call_id)}`): "
        f"`durable-tools callbacks serve --tools MODULE {_word(run_id)}`"
    )


def _unticked(text: str) -> str:
    """`text` without backticks or line breaks, to sit in a markdown code span it cannot
    end (the details are markdown: what followed a backtick of a model's call id, or a
    blank line in it, would render as such, a link included), its zero-width and bidi
    characters shown as escapes (what another run told could hide or reorder the text)."""
    return show_invisible(_LINE_BREAKS.sub(" ", text.replace("`", "'")))


_LINE_BREAKS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
"""Control characters (line breaks among them) and Unicode's line and paragraph
separators: each becomes a space in the details."""


def _word(text: str) -> str:
    """`text` as one shell word in a code span: an operator pastes the command into a
    shell, and a call id is the model's. Backticks go first, then the quoting (a backtick
    turned into a quote after quoting would end the quoted word)."""
    return shlex.quote(_unticked(text))


def evicting() -> bool:
    """Whether the workflow is being evicted from the worker's cache: a `finally` block
    then does nothing that calls into the workflow.

    On eviction the SDK closes pending coroutines (GeneratorExit runs their `finally`
    blocks) outside the workflow event loop, where workflow calls would raise.
    """
    return not workflow.in_workflow() or isinstance(sys.exception(), GeneratorExit)


# ------------------------------------------------------- sub-agents' approvals

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
