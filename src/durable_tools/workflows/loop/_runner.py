"""The agent loop itself, over a `RunState`: shared by `AgentWorkflow` and `AgentLoop`.

Model call -> the turn's tool calls through the call pipeline -> results back to the
model, until the model answers without tool calls or a limit is hit. One implementation
serves both the agent workflow and an agent loop embedded in a user's own workflow, so
the two record the same commands in the same order.
"""

from __future__ import annotations

import asyncio

from temporalio import workflow
from temporalio.exceptions import ActivityError, ChildWorkflowError, FailureError

from durable_tools.messages import Message, ToolCall
from durable_tools.policy._decisions import InvalidDecision
from durable_tools.protocol._event_names import RUN_ENDED
from durable_tools.protocol._limits import (
    MAX_CANCEL_REASON_CHARS,
    MAX_REASON_CHARS,
    MAX_REFUSED_CALLS,
    PAYLOAD_BUDGET_BYTES,
    clip,
    payload_bytes,
)
from durable_tools.protocol._run_io import AgentResult, RunSnapshot
from durable_tools.protocol._types import RunStatus
from durable_tools.protocol._wait_types import ApprovalDecision
from durable_tools.workflows.calls._pipeline import refuse_over_turn_limit, run_calls
from durable_tools.workflows.catalog._run_catalog import catalog_summary, load_catalog
from durable_tools.workflows.gates._decisions import (
    check_decision_of,
    end_approvals,
    record_decision,
)
from durable_tools.workflows.loop._continue import maybe_continue_as_new
from durable_tools.workflows.loop._final_output import (
    accept_final_calls,
    accept_text,
    split_final_calls,
)
from durable_tools.workflows.loop._model_turn import call_model
from durable_tools.workflows.loop._session import run_session
from durable_tools.workflows.loop._usage import run_cost, spend_tokens
from durable_tools.workflows.observe._visibility import publish, relayed_waits
from durable_tools.workflows.run._state import EndRun, RunState
from durable_tools.workflows.script._run import script_routes

__all__ = [
    "FAILED_RUN_PATCH",
    "TURN_LIMIT_PATCH",
    "request_cancel",
    "run_agent_loop",
    "signal_decision",
    "snapshot",
]

TURN_LIMIT_PATCH = "turn-limit-repair"
"""Marks runs in which calls over `max_tool_calls_per_turn` get a repair message. A run
recorded before ended `limit_reached` there, and its replay must do the same. Asked only
when a turn is over the limit."""

FAILED_RUN_PATCH = "failed-run-answers"
"""Marks runs that, failed by an activity or a child, answer a session's messages in flight
with the error before the execution fails, and that record a failed catalog load in their
status first. A run recorded before failed at once (its messages unanswered, its status
`running` when the catalog failed), and replays so."""


async def run_agent_loop(state: RunState, *, continue_as_new: bool = True) -> AgentResult:
    """Run the agent from `state` to its end and return how it ended.

    Args:
        state: The run's state, from `start_state(input)`.
        continue_as_new: Whether the loop may continue the current workflow as new when
            its history grows long. Only the agent workflow owns its workflow; an embedded
            loop leaves its host's history to the host.

    Raises:
        asyncio.CancelledError: the workflow was cancelled through Temporal (recorded first).
        FailureError: an activity or child failed the run (recorded first).
    """
    input = state.input
    if input.carried is None:
        try:
            await load_catalog(state)
        except EndRun as end:  # a catalog too large even packed: the reason has the figures
            return _finish(state, end.status, reason=end.reason)
        except FailureError as failure:  # tools the worker does not have, say
            if workflow.patched(FAILED_RUN_PATCH):  # a run recorded before said `running`
                _fail(state, failure)
            raise
        if state.config.instructions:
            state.conversation.append(Message.system(state.config.instructions))
        if input.prompt or state.session is None:  # a session may start awaiting a message
            state.conversation.append(Message.user(input.prompt))
        state.event("run.started", detail=catalog_summary(state))
    else:
        state.event("run.continued", detail=f"continued-as-new #{state.continued}")
    try:
        if state.session is None:
            await _loop(state, continue_as_new=continue_as_new)
        else:  # a session never continues-as-new mid-message: its update waits there
            await run_session(
                state, lambda: _loop(state, continue_as_new=False), continue_as_new=continue_as_new
            )
        return _finish(state, RunStatus.COMPLETED)
    except EndRun as end:
        return _finish(state, end.status, reason=end.reason)
    except asyncio.CancelledError:
        # The run was cancelled through Temporal itself: record it, then let the engine
        # mark the execution cancelled.
        reason = state.cancel_reason or workflow.cancellation_reason() or "run cancelled"
        state.cancel_running(reason)
        _finish(state, RunStatus.CANCELLED, reason=reason)
        raise
    except FailureError as failure:  # fails the execution; say so in AgentStatus first
        _fail(state, failure)
        raise


async def _loop(state: RunState, *, continue_as_new: bool) -> None:
    limits = state.config.limits
    while True:
        state.check_cancelled()
        if state.turn - state.turn_base >= limits.max_turns:  # a session's count per message
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
            if state.config.output_type is None:
                state.final_answer = message.content or ""
                return
            if accept_text(state, message):
                return
            continue  # the model was asked to repair its answer
        # `finals`: calls of the structured output's `final_answer` tool (none without one).
        finals, calls = split_final_calls(state.config, message.tool_calls)
        if calls:
            calls, over = _check_turn_limits(state, calls)
            state.tool_calls += len(calls)
            state.conversation.extend(await run_calls(state, calls, script_routes(state.config)))
            state.conversation.extend(refuse_over_turn_limit(state, over))
        if finals and accept_final_calls(state, finals):
            return
        state.check_cancelled()
        if continue_as_new:
            await maybe_continue_as_new(state)


def _check_turn_limits(
    state: RunState, calls: list[ToolCall]
) -> tuple[list[ToolCall], list[ToolCall]]:
    """The calls that run this turn, and those over `max_tool_calls_per_turn`.

    Too many calls in one answer is the model's mistake, which it can repair: the first
    `max_tool_calls_per_turn` run and the rest are answered with an error naming the
    limit, instead of ending a run that may have waited days for this turn. With
    `on_invalid_call="fail"`, for more than `MAX_REFUSED_CALLS` calls over the limit (a
    broken model), and in runs recorded before this (no `TURN_LIMIT_PATCH` marker), the
    run ends `limit_reached` as it did. `max_tool_calls` (per run) is a
    budget, not a mistake: reaching it ends the run.

    Raises:
        EndRun: the per-run budget is spent, or the per-turn limit ends the run.
    """
    limits = state.config.limits
    per_turn = limits.max_tool_calls_per_turn
    over: list[ToolCall] = []
    if len(calls) > per_turn:
        if (
            state.config.on_invalid_call == "fail"
            or len(calls) - per_turn > MAX_REFUSED_CALLS
            or not workflow.patched(TURN_LIMIT_PATCH)
        ):
            raise EndRun(
                RunStatus.LIMIT_REACHED,
                f"the model asked for {len(calls)} tool calls in one turn; "
                f"max_tool_calls_per_turn is {per_turn}",
            )
        calls, over = calls[:per_turn], calls[per_turn:]
    if state.tool_calls - state.tool_calls_base + len(calls) > limits.max_tool_calls:
        raise EndRun(RunStatus.LIMIT_REACHED, f"max_tool_calls ({limits.max_tool_calls}) reached")
    return calls, over


def _fail(state: RunState, failure: FailureError) -> None:
    """Record that `failure` fails the execution (the status, and the reason with the
    error under Temporal's wrapper: an activity's error names what was wrong)."""
    _finish(state, RunStatus.FAILED, reason=_failure_reason(failure))
    # A run recorded before answered a message in flight with a `failed` reply, if any.
    state.failing = workflow.patched(FAILED_RUN_PATCH)


def _failure_reason(failure: BaseException) -> str:
    """`failure`'s message followed by its causes' ("Activity task failed: the agent asks
    for tools this worker does not have: x")."""
    parts: list[str] = []
    error: BaseException | None = failure
    while error is not None and len(parts) < _CAUSES_SHOWN:
        text = error.message if isinstance(error, FailureError) else str(error)
        # Temporal's wrappers ("Activity task failed") say nothing under an error of ours;
        # a wrapper quoting its cause ("local activity x failed: ...") repeats it.
        wrapper = isinstance(error, ActivityError | ChildWorkflowError) and bool(parts)
        if text and not wrapper and not any(text in part for part in parts):
            parts.append(text)
        error = error.__cause__
    return ": ".join(parts) or type(failure).__name__


_CAUSES_SHOWN = 4
"""Errors of a failure's chain its reason names (a chain of children can be long)."""


def _finish(state: RunState, status: RunStatus, *, reason: str | None = None) -> AgentResult:
    state.status = status
    state.reason = None if reason is None else clip(reason, MAX_REASON_CHARS)
    end_approvals(state.gates)
    publish(state)
    state.event(RUN_ENDED[status], detail=state.reason)
    result = AgentResult(
        status=status,
        final_answer=state.final_answer,
        reason=state.reason,
        turns=state.turn,
        tool_calls=state.tool_calls,
        output=state.output,
    )
    answer = state.final_answer or ""
    if len(answer) > PAYLOAD_BUDGET_BYTES // 8 and payload_bytes(result) > PAYLOAD_BUDGET_BYTES:
        # The whole answer stays in the conversation (and its snapshot); the result
        # must fit in one payload.
        result.final_answer = clip(answer, PAYLOAD_BUDGET_BYTES // 4)
    return result


# --------------------------------------------- handler bodies both front ends share


def signal_decision(state: RunState, decision: object) -> None:
    """A fire-and-forget decision (webhooks): recorded if valid, else refused in the events."""
    try:
        check_decision_of(state, decision)
    except InvalidDecision as error:
        call_id = decision.call_id if isinstance(decision, ApprovalDecision) else None
        state.event("approval.rejected", call_id=call_id, detail=str(error)[:500])
        return
    assert isinstance(decision, ApprovalDecision)
    record_decision(state, decision)


def request_cancel(state: RunState, reason: object) -> None:
    """End the run cleanly: running tools are cancelled (through their heartbeats), each
    given a grace period to stop (`_execute.CANCEL_GRACE_SECONDS`). A repeated cancel
    changes nothing: the first reason stands, and no grace period restarts."""
    if state.cancel_reason is None:
        text = reason if isinstance(reason, str) and reason else "cancelled by request"
        state.cancel_reason = clip(text, MAX_CANCEL_REASON_CHARS)
        state.event("run.cancel_requested", detail=state.cancel_reason)
        state.cancel_running(state.cancel_reason)


def snapshot(state: RunState) -> RunSnapshot:
    """What the run is doing now (the `status` query)."""
    return RunSnapshot(
        status=state.status,
        agent=state.config.name,
        turn=state.turn,
        tool_calls=state.tool_calls,
        final_answer=state.final_answer,
        reason=state.reason,
        pending_approvals=list(state.gates.approvals.pending.values()),
        pending_authorizations=list(state.gates.authorizations.pending.values()),
        subagent_approvals=relayed_waits(state.gates),
        running_tools=state.running_calls(),
        continued=state.continued,
        conversation_offset=state.offset,
        policy=state.gates.policy,
        standing_grants=list(state.gates.standing_grants),
        usage=state.model.usage,
        cost=run_cost(state),
        pending_callbacks=list(state.gates.callbacks.pending.values()),
        pending_inputs=list(state.gates.inputs.pending.values()),
        session=state.session.view() if state.session is not None else None,
    )
