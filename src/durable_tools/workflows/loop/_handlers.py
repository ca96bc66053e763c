"""Every handler of an agent run, in one table: `RunHandlers`.

`AgentWorkflow` inherits the table (the SDK collects inherited handlers), and an
`AgentLoop` embedded in a user's workflow registers the very same methods on its host
under a prefix (`register_run_handlers`): what one has, the other has, by construction.

Every handler checks the type and size of what it receives: a signal or update that
raised would fail the workflow task on every retry and wedge the run. The methods only
delegate to the stages that own the state they touch (`_decisions`, `_runner`,
`_steering`, `_callback_gate`, `_input_gate`, `_authorization_gate`).
"""

# No `from __future__ import annotations` here: the SDK reads these annotations to decode
# each handler's payload (pydantic models arrive as models, `Any` stays as sent), also for
# the handlers an embedded loop registers dynamically, and the sandbox re-imports this
# module for every run in strict mode, where string annotations would be evaluated anew.

import inspect
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from durable_tools.messages import Message
    from durable_tools.protocol._callback_types import PendingCallback
    from durable_tools.protocol._policy_types import BatchDecision, GrantRevocation
    from durable_tools.protocol._records import EventsPage, RunEvent, ToolCallRecord
    from durable_tools.protocol._session_types import SessionReply
    from durable_tools.protocol._types import PolicyChange
from durable_tools.protocol._limits import check_handler_prefix
from durable_tools.protocol._run_io import ConversationView, RunSnapshot
from durable_tools.protocol._wait_types import (
    ApprovalDecision,
    AuthorizationCompleted,
    PendingAuthorization,
)
from durable_tools.workflows.gates._authorization_gate import (
    accept_authorization,
    check_reissue,
    reissue,
)
from durable_tools.workflows.gates._callback_gate import (
    accept_callback_result,
    check_callback_result,
)
from durable_tools.workflows.gates._decisions import (
    apply_policy_change,
    apply_revocation,
    batch_decisions,
    check_batch,
    check_decision_of,
    check_policy_change,
    check_revocation,
    record_decision,
)
from durable_tools.workflows.gates._input_gate import accept_answer, check_answer
from durable_tools.workflows.gates._subagent_waits import accept_subagent_notice
from durable_tools.workflows.loop._runner import request_cancel, signal_decision, snapshot
from durable_tools.workflows.loop._session import (
    check_close,
    check_message,
    reply_to,
    request_close,
    retried_reply,
    take_message,
)
from durable_tools.workflows.loop._steering import accept_steer
from durable_tools.workflows.run._state import RunState

__all__ = [
    "MAX_EVENTS_PAGE",
    "HandlerKind",
    "RunHandler",
    "RunHandlers",
    "register_run_handlers",
    "run_handlers",
]

MAX_EVENTS_PAGE = 500
"""Most events one `events_since` answer holds (a query result is one payload)."""

HandlerKind = Literal["update", "signal", "query"]


class RunHandlers:
    """The signals, updates and queries of one agent run, working on `self._state`."""

    _state: RunState

    # ------------------------------------------------------------- decisions

    @workflow.update
    async def decide(self, decision: ApprovalDecision) -> str:
        """Approve or deny a pending tool call. Invalid decisions are rejected by the validator
        and never enter history."""
        return record_decision(self._state, decision)

    @decide.validator
    def _validate_decision(self, decision: ApprovalDecision) -> None:
        check_decision_of(self._state, decision)

    @workflow.signal(name="decision")
    def decision_signal(self, decision: ApprovalDecision | None) -> None:
        """Fire-and-forget decision (webhooks). An invalid one is recorded and ignored."""
        signal_decision(self._state, decision)

    @workflow.update
    async def decide_batch(self, batch: BatchDecision) -> list[str]:
        """Decide several pending calls at once, each bound to its own arguments hash.

        The validator checks every item before any applies: one bad item rejects the batch.
        """
        return [record_decision(self._state, decision) for decision in batch_decisions(batch)]

    @decide_batch.validator
    def _validate_batch(self, batch: BatchDecision) -> None:
        check_batch(self._state, batch)

    @workflow.update
    async def set_policy(self, change: PolicyChange) -> str:
        """Replace the run's live approval policy (operators only: never a model's tool).

        The next calls follow the new policy. Calls already waiting are refitted to it:
        a tool it denies is denied, deciders it names replace theirs (approvals from people
        it no longer names stop counting); their quorum stays as asked.
        """
        return apply_policy_change(self._state, change)

    @set_policy.validator
    def _validate_policy(self, change: PolicyChange) -> None:
        check_policy_change(change)

    @workflow.update
    async def revoke_grant(self, revocation: GrantRevocation) -> str:
        """Revoke a run-scoped standing grant: its tool's calls are asked again."""
        return apply_revocation(self._state, revocation)

    @revoke_grant.validator
    def _validate_revocation(self, revocation: GrantRevocation) -> None:
        check_revocation(self._state.gates, revocation)

    # --------------------------------------------------------- authorization

    @workflow.signal
    def authorization_completed(self, completed: AuthorizationCompleted | None) -> None:
        """The OAuth callback finished (or failed) an authorization for a waiting call."""
        accept_authorization(self._state, completed)

    @workflow.update
    async def reissue_authorization(self, call_id: str) -> PendingAuthorization:
        """A fresh authorization link for a call waiting on one (the old link may have
        expired); returns the renewed wait, with the new link and its expiry."""
        return await reissue(self._state.gates, call_id)

    @reissue_authorization.validator
    def _validate_reissue(self, call_id: str) -> None:
        check_reissue(self._state.gates, call_id)

    # ------------------------------------------------------------- sub-agents

    # Typed `Any` so that whatever arrives reaches the checks (and a refusal event).
    @workflow.signal(name="subagent_waits")
    def subagent_waits(self, notice: Any) -> None:
        """A running sub-agent tells which approvals it (and its own sub-agents) waits
        for: the run shows them as its own wait. Checked in `_subagent_waits`."""
        accept_subagent_notice(self._state, notice)

    # ------------------------------------------------------- steering, cancel

    # Typed `Any` so that whatever arrives reaches the checks (and a refusal event)
    # instead of being dropped by the SDK's decoder without a trace; see `_steering`.
    @workflow.signal
    def steer(self, instruction: Any) -> None:
        """A new instruction, given to the model as a user message before its next turn.

        Refused (and said so in the events) when it is not text, longer than
        `MAX_STEER_CHARS`, or when `MAX_PENDING_STEERS` already wait for the next turn.
        `steer_turn` takes the same instruction with the option to skip the turn's
        remaining calls.
        """
        accept_steer(self._state, instruction)

    @workflow.signal(name="steer_turn")
    def steer_turn(self, steer: Any) -> None:
        """A `Steer` (or plain text): an instruction, optionally skipping the turn's rest."""
        accept_steer(self._state, steer)

    @workflow.signal
    def cancel(self, reason: Any = None) -> None:
        """End the run cleanly: running tools are cancelled (through their heartbeats).
        A reason that is not text is replaced by a generic one."""
        request_cancel(self._state, reason)

    # ---------------------------------------------------------------- sessions

    # Typed `Any` so that whatever a client sends reaches the validator's checks.
    @workflow.update
    async def send_message(self, message: Any) -> SessionReply:
        """The user's next message to a session; returns its answer once the model gave it
        (the update waits durably: through approvals, for days if need be).

        Refused (before it enters history) when the run is not a session, has ended or is
        closing, is answering a message already, or the text is empty or too long.
        """
        retried = retried_reply(self._state, message)
        if retried is not None:  # a retry of a message answered in an earlier run
            return retried
        number = take_message(self._state, message)
        return await reply_to(self._state, number, message)

    @send_message.validator
    def _validate_message(self, message: Any) -> None:
        check_message(self._state, message)

    @workflow.update
    async def close(self, reason: Any = None) -> str:
        """End a session: now when it awaits a message, else after the current answer."""
        return request_close(self._state, reason)

    @close.validator
    def _validate_close(self, reason: Any = None) -> None:
        check_close(self._state, reason)

    # ------------------------------------------------ callback tools, questions

    # Typed `Any` so that whatever a client sends reaches the validator's checks (and a
    # clear rejection) instead of failing in the SDK's decoder.
    @workflow.update
    async def callback_result(self, result: Any) -> str:
        """A client's answer to a published callback call (see `_callback_gate`)."""
        return accept_callback_result(self._state, result)

    @callback_result.validator
    def _validate_callback_result(self, result: Any) -> None:
        check_callback_result(self._state, result)

    @workflow.update
    async def answer_input(self, call_id: Any, action: Any, content: Any = None) -> str:
        """The user's answer to an MCP server's question: accept (content), decline, cancel."""
        return accept_answer(self._state.gates, call_id, action, content)

    @answer_input.validator
    def _validate_answer_input(self, call_id: Any, action: Any, content: Any = None) -> None:
        check_answer(self._state.gates, call_id, action, content)

    # ---------------------------------------------------------------- queries

    @workflow.query
    def pending_callbacks(self) -> list[PendingCallback]:
        """Callback calls published and waiting for a client to run them."""
        return list(self._state.gates.callbacks.pending.values())

    @workflow.query
    def status(self) -> RunSnapshot:
        """What the run is doing now."""
        return snapshot(self._state)

    @workflow.query
    def conversation(self) -> list[Message]:
        """The conversation this run holds: from `status().conversation_offset` on."""
        return self._state.conversation

    @workflow.query
    def conversation_view(self) -> ConversationView:
        """The conversation this run holds, and the snapshot holding the earlier messages."""
        state = self._state
        return ConversationView(
            offset=state.offset,
            snapshot=state.snapshot,
            snapshot_length=state.snapshot_length,
            messages=state.conversation,
        )

    @workflow.query
    def timeline(self) -> list[ToolCallRecord]:
        """Every tool call, in the order the model asked for them."""
        return self._state.timeline

    @workflow.query
    def events(self) -> list[RunEvent]:
        """The run's event log."""
        return self._state.events

    @workflow.query
    def events_since(self, cursor: int) -> EventsPage:
        """The kept events whose `seq` is `cursor` or later (at most `MAX_EVENTS_PAGE`),
        the cursor to ask from next, and how many after `cursor` are no longer kept."""
        if isinstance(cursor, bool) or not isinstance(cursor, int) or cursor < 0:
            raise ValueError(f"events_since takes an event index >= 0, got {cursor!r}")
        state = self._state
        kept = state.events
        first = state.events_total - len(kept)
        start = max(cursor - first, 0)
        page = kept[start : start + MAX_EVENTS_PAGE]
        return EventsPage(
            events=page,
            next=max(cursor, first) + len(page),
            total=state.events_total,
            missed=max(first - cursor, 0),
            status=state.status,
        )


@dataclass(frozen=True)
class RunHandler:
    """One entry of the table: its wire name, kind, method and update validator."""

    name: str
    kind: HandlerKind
    method: Callable[..., Any]
    validator: Callable[..., None] | None = None


def run_handlers() -> list[RunHandler]:
    """Every handler `RunHandlers` declares, read from the SDK's own decorations."""
    table: list[RunHandler] = []
    for _, member in inspect.getmembers(RunHandlers):
        signal = getattr(member, "__temporal_signal_definition", None)
        query = getattr(member, "__temporal_query_definition", None)
        update = getattr(member, "_defn", None)
        if signal is not None:
            table.append(RunHandler(signal.name, "signal", member))
        elif query is not None:
            table.append(RunHandler(query.name, "query", member))
        elif isinstance(member, workflow.UpdateMethodMultiParam) and update is not None:
            table.append(RunHandler(update.name, "update", member, update.validator))
    return sorted(table, key=lambda handler: (handler.kind, handler.name))


def _taken(kind: HandlerKind, name: str) -> bool:
    if kind == "update":
        return workflow.get_update_handler(name) is not None
    if kind == "signal":
        return workflow.get_signal_handler(name) is not None
    return workflow.get_query_handler(name) is not None


def register_run_handlers(state: RunState, prefix: str) -> None:
    """Register every `RunHandlers` handler, bound to `state`, on the current workflow,
    each under `prefix + name`; `state.handler_prefix` records the prefix for the parties
    outside the workflow (the OAuth callback signals `prefix + "authorization_completed"`).

    Each handler is registered as a bound method, so the SDK reads the same annotations
    as for the agent workflow's own: a payload decodes to the same type either way.

    Raises:
        ValueError: the prefix is not a valid one, or a name is taken by a handler of the
            workflow already (the host's own, or a loop's registered before).
    """
    check_handler_prefix(prefix)
    table = run_handlers()
    clashes = [prefix + h.name for h in table if _taken(h.kind, prefix + h.name)]
    if clashes:
        raise ValueError(
            f"the workflow has handlers named {', '.join(clashes)} already: "
            "register the agent's handlers under another prefix"
        )
    bound = RunHandlers()
    bound._state = state
    for handler in table:
        method = types.MethodType(handler.method, bound)
        name = prefix + handler.name
        if handler.kind == "update":
            validator = types.MethodType(handler.validator, bound) if handler.validator else None
            workflow.set_update_handler(name, method, validator=validator)
        elif handler.kind == "signal":
            workflow.set_signal_handler(name, method)
        else:
            workflow.set_query_handler(name, method)
    state.handler_prefix = prefix
