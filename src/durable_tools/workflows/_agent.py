"""The agent loop as a Temporal workflow: the handlers, and the loop from `_runner`.

Model call -> the turn's tool calls through the call pipeline (`_pipeline`: validate ->
gate -> execute -> record) -> results back to the model, until the model answers without
tool calls or a limit is hit (`_runner.run_agent_loop`, which an `AgentLoop` embedded in
a user's workflow runs too). All state lives in one `RunState`. Everything here is
deterministic: tools, models and token stores are reached only through activities, and
the tools a run may use come from the catalog activity, recorded in history at start.

Every handler checks the type and size of what it receives: a signal or update that
raised would fail the workflow task on every retry and wedge the run.
"""

# No `from __future__ import annotations` here: the sandbox re-imports this module for
# every run, and string annotations would be evaluated (compiled) for each handler anew.

import asyncio
from typing import Any

from pydantic import ValidationError
from temporalio import workflow
from temporalio.exceptions import FailureError

with workflow.unsafe.imports_passed_through():
    from durable_tools.messages import Message
    from durable_tools.workflows._callback_types import PendingCallback
    from durable_tools.workflows._policy_types import BatchDecision, GrantRevocation
    from durable_tools.workflows._types import (
        ApprovalDecision,
        AuthorizationCompleted,
        EventsPage,
        PendingAuthorization,
        PolicyChange,
        RunEvent,
        ToolCallRecord,
    )
from durable_tools.workflows._authorization_gate import check_reissue, reissue
from durable_tools.workflows._callback_gate import accept_callback_result, check_callback_result
from durable_tools.workflows._decisions import (
    apply_policy_change,
    apply_revocation,
    batch_decisions,
    check_batch,
    check_decision_of,
    check_policy_change,
    check_revocation,
    record_decision,
)
from durable_tools.workflows._input_gate import accept_answer, check_answer
from durable_tools.workflows._run_io import AgentInput, AgentResult, ConversationView, RunSnapshot
from durable_tools.workflows._runner import (
    request_cancel,
    run_agent_loop,
    signal_decision,
    snapshot,
)
from durable_tools.workflows._state import RunState
from durable_tools.workflows._steering import accept_steer
from durable_tools.workflows._token_stream import close_stream

__all__ = ["MAX_EVENTS_PAGE", "AgentWorkflow"]

MAX_EVENTS_PAGE = 500
"""Most events one `events_since` answer holds (a query result is one payload)."""


# A start whose input does not validate (a hand-written `temporal workflow start`, say)
# fails the run with the validation error instead of failing its first task for ever.
@workflow.defn(name="AgentWorkflow", failure_exception_types=[ValidationError])
class AgentWorkflow:
    """A durable agent run. Start it with an `AgentInput`; it returns an `AgentResult`."""

    @workflow.init
    def __init__(self, input: AgentInput) -> None:
        self._state = RunState.start(input)

    # ----------------------------------------------------------------- the loop

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        if not self._state.config.stream_tokens:
            return await run_agent_loop(self._state)
        # A streaming run ends its companion stream when it ends (not when it continues
        # as new: that is no FailureError nor a cancellation, and the stream carries on).
        try:
            result = await run_agent_loop(self._state)
        except (FailureError, asyncio.CancelledError):
            await close_stream(workflow.info().workflow_id)
            raise
        await close_stream(workflow.info().workflow_id)
        return result

    # ----------------------------------------------------------------- handlers

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
        check_revocation(self._state, revocation)

    @workflow.signal
    def authorization_completed(self, completed: AuthorizationCompleted | None) -> None:
        """The OAuth callback finished (or failed) an authorization for a waiting call."""
        state = self._state
        if not isinstance(completed, AuthorizationCompleted):
            state.event("authorization.ignored", detail="the signal carried no authorization")
            return
        if completed.call_id not in state.authorizations:
            state.event(
                "authorization.ignored",
                call_id=completed.call_id,
                detail="no authorization pending for this call",
            )
            return
        state.grants[completed.call_id] = completed

    @workflow.update
    async def reissue_authorization(self, call_id: str) -> PendingAuthorization:
        """A fresh authorization link for a call waiting on one (the old link may have
        expired); returns the renewed wait, with the new link and its expiry."""
        return await reissue(self._state, call_id)

    @reissue_authorization.validator
    def _validate_reissue(self, call_id: str) -> None:
        check_reissue(self._state, call_id)

    @workflow.signal
    def steer(self, instruction: str | None) -> None:
        """A new instruction, given to the model as a user message before its next turn.

        Refused (and said so in the events) when it is not text, longer than
        `MAX_STEER_CHARS`, or when `MAX_PENDING_STEERS` already wait for the next turn.
        `steer_turn` takes the same instruction with the option to skip the turn's
        remaining calls.
        """
        accept_steer(self._state, instruction)

    @workflow.signal(name="steer_turn")
    def steer_turn(self, steer: Any) -> None:
        """A `Steer` (or plain text): an instruction, optionally skipping the turn's rest.

        Typed `Any` so that whatever arrives reaches the checks (and a refusal event)
        instead of being dropped by the SDK's decoder without a trace; see `_steering`.
        """
        accept_steer(self._state, steer)

    @workflow.signal
    def cancel(self, reason: str | None = None) -> None:
        """End the run cleanly: running tools are cancelled (through their heartbeats)."""
        request_cancel(self._state, reason)

    # Typed `Any` so that whatever a client sends reaches the validator's checks (and a
    # clear rejection) instead of failing in the SDK's decoder.
    @workflow.update
    async def callback_result(self, result: Any) -> str:
        """A client's answer to a published callback call (see `_callback_gate`)."""
        return accept_callback_result(self._state, result)

    @callback_result.validator
    def _validate_callback_result(self, result: Any) -> None:
        check_callback_result(self._state, result)

    # Typed `Any` so that whatever a client sends reaches the validator's checks.
    @workflow.update
    async def answer_input(self, call_id: Any, action: Any, content: Any = None) -> str:
        """The user's answer to an MCP server's question: accept (content), decline, cancel."""
        return accept_answer(self._state, call_id, action, content)

    @answer_input.validator
    def _validate_answer_input(self, call_id: Any, action: Any, content: Any = None) -> None:
        check_answer(self._state, call_id, action, content)

    # ------------------------------------------------------------------ queries

    @workflow.query
    def pending_callbacks(self) -> list[PendingCallback]:
        """Callback calls published and waiting for a client to run them."""
        return list(self._state.callbacks.values())

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
