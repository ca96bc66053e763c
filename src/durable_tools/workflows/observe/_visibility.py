"""What operators see of a run: search attributes and the UI's current details."""

from __future__ import annotations

import re
import shlex
import sys
from typing import Any

from temporalio import workflow
from temporalio.common import SearchAttributeUpdate

from durable_tools import search_attributes as sa
from durable_tools.policy._decide import describe_policy
from durable_tools.protocol._callback_types import PendingCallback
from durable_tools.protocol._input_types import PendingInput
from durable_tools.protocol._invisible import show_invisible
from durable_tools.protocol._limits import MAX_REASON_CHARS, clip
from durable_tools.protocol._policy_types import ApprovalPolicy
from durable_tools.protocol._resume import answer_command
from durable_tools.protocol._run_io import REVISION_SHORT_START
from durable_tools.protocol._types import AgentConfig, RunStatus
from durable_tools.protocol._wait_types import (
    PendingApproval,
    PendingAuthorization,
    SubagentWait,
)
from durable_tools.workflows.observe._subagents import (
    relayed_count,
    relayed_waits,
    report_to_parent,
)
from durable_tools.workflows.run._state import RunState
from durable_tools.workflows.run._wait_maps import GateState

__all__ = ["FINAL", "evicting", "publish"]

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
