"""The agent loop as a Temporal workflow: the loop and the handlers, nothing else.

Model call -> the turn's tool calls through the call pipeline (`_pipeline`: validate ->
gate -> execute -> record) -> results back to the model, until the model answers without
tool calls or a limit is hit. All state lives in one `RunState`. Everything here is
deterministic: tools, models and token stores are reached only through activities, and
the tools a run may use come from the catalog activity, recorded in history at start.

Every handler checks the type and size of what it receives: a signal or update that
raised would fail the workflow task on every retry and wedge the run.
"""

# No `from __future__ import annotations` here: the sandbox re-imports this module for
# every run, and string annotations would be evaluated (compiled) for each handler anew.

import asyncio
from datetime import timedelta
from typing import Any

from pydantic import ValidationError
from temporalio import workflow
from temporalio.exceptions import FailureError

with workflow.unsafe.imports_passed_through():
    from durable_tools.activities._types import CATALOG_ACTIVITY, CatalogRequest
    from durable_tools.messages import Message, ToolCall
    from durable_tools.tools import ToolSpec
    from durable_tools.workflows._approvals import InvalidDecision
    from durable_tools.workflows._limits import (
        MAX_CANCEL_REASON_CHARS,
        MAX_REASON_CHARS,
        PAYLOAD_BUDGET_BYTES,
        clip,
        payload_bytes,
    )
    from durable_tools.workflows._policy_types import BatchDecision, GrantRevocation
    from durable_tools.workflows._types import (
        AgentInput,
        AgentResult,
        ApprovalDecision,
        AuthorizationCompleted,
        EventsPage,
        PendingAuthorization,
        PolicyChange,
        RunEvent,
        RunSnapshot,
        RunStatus,
        ToolCallRecord,
    )

from durable_tools.workflows._authorization_gate import check_reissue, reissue
from durable_tools.workflows._continue import maybe_continue_as_new
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
from durable_tools.workflows._model_turn import call_model
from durable_tools.workflows._pipeline import run_calls
from durable_tools.workflows._state import EndRun, RunState
from durable_tools.workflows._steering import accept_steer
from durable_tools.workflows._usage import run_cost, spend_tokens
from durable_tools.workflows._visibility import publish

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
        state = self._state
        if input.carried is None:
            state.catalog = await workflow.execute_activity(
                CATALOG_ACTIVITY,
                CatalogRequest(
                    identity=input.identity,
                    granted_scopes=input.granted_scopes,
                    tools=state.config.tools,
                ),
                result_type=list[ToolSpec],
                start_to_close_timeout=timedelta(seconds=30),
                summary="load the tool catalog",
            )
            if state.config.instructions:
                state.conversation.append(Message.system(state.config.instructions))
            state.conversation.append(Message.user(input.prompt))
            state.event("run.started", detail=f"{len(state.catalog)} tools advertised")
        else:
            state.event("run.continued", detail=f"continued-as-new #{state.continued}")
        try:
            await self._loop()
            return self._finish(RunStatus.COMPLETED)
        except EndRun as end:
            return self._finish(end.status, reason=end.reason)
        except asyncio.CancelledError:
            # The run was cancelled through Temporal itself: record it, then let the engine
            # mark the execution cancelled.
            state.cancel_running("run cancelled")
            self._finish(RunStatus.CANCELLED, reason="run cancelled")
            raise
        except FailureError as failure:  # fails the execution; say so in AgentStatus first
            self._finish(RunStatus.FAILED, reason=failure.message)
            raise

    async def _loop(self) -> None:
        state = self._state
        limits = state.config.limits
        while True:
            state.check_cancelled()
            if state.turn >= limits.max_turns:
                raise EndRun(RunStatus.LIMIT_REACHED, f"max_turns ({limits.max_turns}) reached")
            while state.steer:
                state.conversation.append(Message.user(state.steer.pop(0)))
            state.skip_steer = None  # a skip lasts until the model reads the instruction
            publish(state, f"Calling the model (turn {state.turn + 1}).")
            response = await call_model(state)
            state.turn += 1
            message = response.message
            state.conversation.append(message)
            spend_tokens(state, response)
            if not message.tool_calls:
                state.final_answer = message.content or ""
                return
            self._check_turn_limits(message.tool_calls)
            state.tool_calls += len(message.tool_calls)
            state.conversation.extend(await run_calls(state, message.tool_calls))
            state.check_cancelled()
            await maybe_continue_as_new(state)

    def _check_turn_limits(self, calls: list[ToolCall]) -> None:
        limits = self._state.config.limits
        if len(calls) > limits.max_tool_calls_per_turn:
            raise EndRun(
                RunStatus.LIMIT_REACHED,
                f"the model asked for {len(calls)} tool calls in one turn; "
                f"max_tool_calls_per_turn is {limits.max_tool_calls_per_turn}",
            )
        if self._state.tool_calls + len(calls) > limits.max_tool_calls:
            raise EndRun(
                RunStatus.LIMIT_REACHED, f"max_tool_calls ({limits.max_tool_calls}) reached"
            )

    def _finish(self, status: RunStatus, *, reason: str | None = None) -> AgentResult:
        state = self._state
        state.status = status
        state.reason = None if reason is None else clip(reason, MAX_REASON_CHARS)
        state.pending.clear()
        state.authorizations.clear()
        publish(state)
        state.event("run." + status.value, detail=state.reason)
        result = AgentResult(
            status=status,
            final_answer=state.final_answer,
            reason=state.reason,
            turns=state.turn,
            tool_calls=state.tool_calls,
        )
        answer = state.final_answer or ""
        if len(answer) > PAYLOAD_BUDGET_BYTES // 8 and payload_bytes(result) > PAYLOAD_BUDGET_BYTES:
            # The whole answer stays in the conversation (and its snapshot); the result
            # must fit in one payload.
            result.final_answer = clip(answer, PAYLOAD_BUDGET_BYTES // 4)
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
        try:
            check_decision_of(self._state, decision)
        except InvalidDecision as error:
            call_id = decision.call_id if isinstance(decision, ApprovalDecision) else None
            self._state.event("approval.rejected", call_id=call_id, detail=str(error)[:500])
            return
        assert isinstance(decision, ApprovalDecision)
        record_decision(self._state, decision)

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

        Calls already waiting keep the deciders they were asked of; the next calls follow
        the new policy.
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
        state = self._state
        if state.cancel_reason is None:
            text = reason if isinstance(reason, str) and reason else "cancelled by request"
            state.cancel_reason = clip(text, MAX_CANCEL_REASON_CHARS)
            state.event("run.cancel_requested", detail=state.cancel_reason)
            state.cancel_running(state.cancel_reason)

    # ------------------------------------------------------------------ queries

    @workflow.query
    def status(self) -> RunSnapshot:
        """What the run is doing now."""
        state = self._state
        return RunSnapshot(
            status=state.status,
            agent=state.config.name,
            turn=state.turn,
            tool_calls=state.tool_calls,
            final_answer=state.final_answer,
            reason=state.reason,
            pending_approvals=list(state.pending.values()),
            pending_authorizations=list(state.authorizations.values()),
            running_tools=state.running_calls(),
            continued=state.continued,
            conversation_offset=state.offset,
            policy=state.policy,
            standing_grants=list(state.standing_grants),
            usage=state.usage,
            cost=run_cost(state),
        )

    @workflow.query
    def conversation(self) -> list[Message]:
        """The whole conversation so far."""
        return self._state.conversation

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
