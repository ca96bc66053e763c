"""Stage 3 of a call: execute it. A tool activity (with workflow-driven retries) or a
sub-agent run; either way the result is a `ToolOutcome` and the attempts it took.

A cancel (the run's, or Temporal's) asks a running tool activity to stop and waits at most
`AgentConfig.cancel_grace_seconds` for it to end. A tool that ends in time is recorded as it ended
(cancelled, or what it returned or raised); one that does not is recorded as "outcome
unknown": it may have taken effect, and it may still be acting. Either way the call is
never run again: after a cancel nothing retries it, and once the run has ended the
activity's late result cannot enter its history (the worker logs it instead).
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal

from temporalio import workflow
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    CancelledError,
    ChildWorkflowError,
    TimeoutError,
)

from durable_tools._activities._types import ToolInvocation
from durable_tools.messages import ToolCall
from durable_tools.protocol._input_types import InputResume
from durable_tools.protocol._options import ToolActivityOptions, activity_options_for
from durable_tools.protocol._records import ToolCallRecord
from durable_tools.protocol._run_io import AgentInput, AgentResult
from durable_tools.protocol._types import AgentConfig, RunStatus
from durable_tools.protocol._wait_types import SUBAGENT_WAITS_SIGNAL
from durable_tools.tools import (
    ErrorKind,
    ToolOutcome,
    ToolSpec,
)
from durable_tools.tools._errors import RUN_ENDING
from durable_tools.tools._validation import safety_digest
from durable_tools.workflows.calls._flow_call import run_flow
from durable_tools.workflows.calls._tool_activity import (
    attempts_after,
    attempts_deadline,
    retry_when_due,
    start_tool_activity,
    workflow_retry_delay,
)
from durable_tools.workflows.gates._callback_gate import await_client
from durable_tools.workflows.gates._input_gate import ask_user, needs_input
from durable_tools.workflows.gates._subagent_waits import (
    SUBAGENT_TOKEN_PATCH,
    SUBAGENT_WAITS_PATCH,
    end_subagent,
    start_subagent,
)
from durable_tools.workflows.observe._visibility import evicting
from durable_tools.workflows.run._replies import (
    activity_error_outcome,
    cancelled_outcome,
    failure_outcome,
    outcome_unknown_text,
    subagent_failure_outcome,
    subagent_outcome,
    timeout_outcome,
)
from durable_tools.workflows.run._run_calls import RunCalls
from durable_tools.workflows.run._state import RunState
from durable_tools.workflows.run._valid_call import ValidCall

__all__ = ["Executed", "execute", "run_ending"]

GRACE_PATCH = "cancel-grace-period"
"""Marks runs whose cancel gave running tools a grace period. A run cancelled by a worker
before it waited for the tool however long it took (its history has no timer there), and
its replay must do the same. Asked only on a cancel that finds a tool running."""

OUTCOME_UNKNOWN = "OutcomeUnknown"
"""The error kind of a call whose tool did not stop within the grace period."""


@dataclass(frozen=True)
class Executed:
    """What running a call left: its outcome and how many attempts it took."""

    outcome: ToolOutcome
    attempts: int
    cancelled: bool = False
    """True when the run's cancel stopped the call."""
    outcome_unknown: str | None = None
    """Set when the call was cancelled but its tool did not stop within the grace
    period: it may have taken effect (and may still be acting). Says so, for people."""
    ends_run: str | None = None
    """Set when the tool raised an error that ends the run (`ToolError(ends_run=True)`):
    the tool's message, for the run's reason."""


async def execute(
    state: RunState, valid: ValidCall, record: ToolCallRecord, grant_ref: str | None
) -> Executed:
    """Run the call: as a sub-agent when the tool is one, else as its tool activity."""
    record.status = "running"
    record.started_at = workflow.now()
    try:
        if valid.spec.subagent is not None:
            return await _run_subagent(state, valid, record)
        if valid.spec.callback:
            return Executed(await await_client(state, valid, record), 1)
        if valid.spec.flow is not None:
            return Executed(await run_flow(state, valid), 1)
        return await _run_activity(state, valid, record, grant_ref)
    except asyncio.CancelledError:
        if state.cancel_reason is None:
            raise  # the whole run is being cancelled through Temporal
        return _cancelled(state, valid)


def _options(calls: RunCalls, spec: ToolSpec) -> ToolActivityOptions:
    options = calls.options.get(spec.name)
    if options is None:
        queue = workflow.info().task_queue  # a limited tool's own queue is named after it
        options = calls.options[spec.name] = activity_options_for(spec, queue)
    return options


async def _run_activity(
    state: RunState, valid: ValidCall, record: ToolCallRecord, grant_ref: str | None
) -> Executed:
    call, spec = valid.call, valid.spec
    options = _options(state.calls, spec)
    info = workflow.info()
    shown = f" {record.arguments}" if state.config.summary_arguments else ""
    label = spec.display_name  # the activity type names the tool already
    summary = f"{label} {call.id}{shown}"[:200] if state.config.activity_summaries else None
    state.event("tool.started", call, transport=valid.transport, attempt=1)
    attempts = 0
    resume: InputResume | None = None  # the user's answers to the server's last questions
    rounds = 0
    deadline = attempts_deadline(options)  # schedule_to_close bounds all the attempts
    # A person approved these arguments under this schema: the worker runs them as they
    # are even if the tool's schema changed while the call waited, but never once the
    # tool may do other things than the one they approved (its safety digest).
    approved = record.decided_by is not None  # a refused call never gets here
    approved_schema = valid.schema if approved else None
    approved_safety = safety_digest(spec) if approved else None
    while True:
        invocation = ToolInvocation(
            call_id=call.id,
            tool_name=spec.name,
            arguments=valid.arguments,
            workflow_id=info.workflow_id,
            identity=state.input.identity,
            idempotency_key=state.calls.keys[call.id],
            attempt_offset=attempts,
            output_limit_bytes=state.config.output_limit_bytes,
            grant_ref=grant_ref,
            input_responses=resume.responses if resume else None,
            request_state=resume.request_state if resume else None,
            approved_schema=approved_schema,
            approved_safety=approved_safety,
        )
        try:
            activity = start_tool_activity(
                spec.name, invocation, options, summary, deadline=deadline
            )
            outcome = await _until_stopped(activity, state.config.cancel_grace_seconds)
        except _Stopped as stopped:
            if stopped.ended == "unknown":
                activity.add_done_callback(functools.partial(_ended_late, state, call))
            return _after_cancel(state, valid, stopped.ended, attempts)
        except ActivityError as err:
            if isinstance(err.cause, CancelledError) and state.cancel_reason is not None:
                return _cancelled(state, valid)
            attempts = attempts_after(err.cause, attempts)
            failure = _failure_outcome(valid, err)
            cause = err.cause
            if (ending := run_ending(cause)) is not None:
                return Executed(failure, attempts, ends_run=ending)  # never retried
            delay = workflow_retry_delay(spec, options, cause, attempts, deadline=deadline)
            if delay is not None:
                state.event(
                    "tool.retrying",
                    call,
                    detail=f"in {delay:.1f}s: {failure.content}",
                    attempt=attempts,
                    error_kind=failure.error_kind,
                )
                if await retry_when_due(delay, deadline):
                    continue
            retryable = isinstance(cause, ApplicationError) and not cause.non_retryable
            if retryable or isinstance(cause, TimeoutError):
                state.event("tool.policy_exhausted", call, detail=failure.content[:300])
            return Executed(failure, attempts)
        # The MCP server asks the user first (elicitation); no other transport can.
        needed = needs_input(outcome) if valid.spec.transport == "mcp" else None
        if needed is not None:
            rounds += 1
            asked = await ask_user(state, valid, record, needed, rounds)
            if isinstance(asked, ToolOutcome):
                return Executed(asked, outcome.attempt)
            resume, attempts = asked, outcome.attempt
            deadline = attempts_deadline(options)  # the user's wait is not the tool's
            continue
        return Executed(outcome, outcome.attempt)


async def _run_subagent(state: RunState, valid: ValidCall, record: ToolCallRecord) -> Executed:
    call, spec, arguments = valid.call, valid.spec, valid.arguments
    assert spec.subagent is not None
    workflow_id = workflow.info().workflow_id
    child_id = f"{workflow_id}.{state.calls.keys[call.id][len(workflow_id) + 1 :]}"
    record.child_run_id = child_id
    state.event(
        "tool.started",
        call,
        detail=f"sub-agent run {child_id}",
        transport="sub-agent",
        attempt=1,
        details={"child_run_id": child_id},  # what a follower of the stream follows too
    )
    # The child tells this run what it waits for (a signal: runs recorded before do not).
    report_to = token = None
    if workflow.patched(SUBAGENT_WAITS_PATCH):
        report_to = state.handler_prefix + SUBAGENT_WAITS_SIGNAL
        # A secret only the child is told, so its notices can be told from forged ones;
        # asked apart, as drawing it moves the run's random sequence.
        if workflow.patched(SUBAGENT_TOKEN_PATCH):
            token = workflow.uuid4().hex
        start_subagent(state, child_id, token)
    child_input = AgentInput(
        prompt=str(arguments["task"]),
        config=AgentConfig.model_validate(spec.subagent),
        identity=state.input.identity,
        granted_scopes=state.input.granted_scopes,
        depth=state.depth + 1,
        max_depth=state.max_depth,
        # What the root run's client knew: clients move to a revision only once every
        # worker knows it (README), so the child's first task is run by one that does.
        revision=state.input.revision,
        report_to=report_to,
        report_token=token,
    )
    bound = spec.policy.schedule_to_close_timeout  # None: the child may run for ever
    try:
        result: AgentResult = await workflow.execute_child_workflow(
            "AgentWorkflow",
            child_input,
            id=child_id,
            result_type=AgentResult,
            task_queue=spec.policy.task_queue,  # None: the run's own
            execution_timeout=None if bound is None else timedelta(seconds=bound),
            static_summary=f"sub-agent {spec.name} of {workflow_id}",
            # If this run closes first, its sub-agents are asked to stop, not killed.
            parent_close_policy=workflow.ParentClosePolicy.REQUEST_CANCEL,
        )
    except ChildWorkflowError as err:
        timed_out = isinstance(err.cause, TimeoutError)
        failed = subagent_failure_outcome(
            call.id,
            spec.name,
            child_id,
            err.cause or err,
            timed_out=timed_out,
            cancelled=isinstance(err.cause, CancelledError),
        )
        return Executed(failed, 1)
    finally:
        if not evicting():  # however the call ended, what the child waited for is over
            end_subagent(state, child_id)
    ok = result.status == RunStatus.COMPLETED
    answer = result.final_answer if ok else f"ended {result.status.value}: {result.reason}"
    return Executed(
        subagent_outcome(call.id, spec.name, child_id, result.status.value, answer, ok=ok), 1
    )


_Ended = ToolOutcome | ActivityError | Literal["cancelled", "unknown"]


class _Stopped(Exception):
    """The call was cancelled while its activity ran; `ended` is how the activity ended
    within the grace period: its outcome or its error, `cancelled` when it never started,
    `unknown` when it had not ended."""

    def __init__(self, ended: _Ended) -> None:
        super().__init__("the call was cancelled")
        self.ended = ended


async def _until_stopped(task: asyncio.Task[ToolOutcome], grace: float) -> ToolOutcome:
    """Await the tool's activity. Cancelled meanwhile, ask it to stop and wait for it at
    most `grace` seconds (`AgentConfig.cancel_grace_seconds`), then raise `_Stopped`,
    never `asyncio.CancelledError`.

    The activity is awaited through a shield so that the wait can end: cancelling an
    activity that waits for its cancellation to complete (`WAIT_CANCELLATION_COMPLETED`)
    would wait as long as its tool, which a sync tool that ignores `ctx.cancelled` can
    make as long as its timeout. A second cancel during the grace period is absorbed: it
    cannot make the wait longer, nor shorter.

    Raises:
        _Stopped: the wait was cancelled.
        temporalio.exceptions.ActivityError: the activity failed before any cancel.
    """
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        pass
    if not workflow.patched(GRACE_PATCH):
        return await _until_ended(task)
    task.cancel()  # Temporal asks the tool to stop: through a heartbeat, or locally
    deadline = workflow.time() + grace
    while not task.done() and (left := deadline - workflow.time()) > 0:
        try:
            await workflow.wait([task], timeout=left)
        except asyncio.CancelledError:
            continue
    if not task.done():
        raise _Stopped("unknown")  # the task stays pending: the workflow does not wait for it
    if task.cancelled():  # cancelled before its activity was even scheduled
        raise _Stopped("cancelled")
    error = task.exception()
    if error is None:
        raise _Stopped(task.result())
    if isinstance(error, ActivityError):
        raise _Stopped(error)
    raise error  # a bug: fail as before


async def _until_ended(task: asyncio.Task[ToolOutcome]) -> ToolOutcome:
    """Cancel the activity and wait for it to end, however long: what the code did before
    the grace period, which a run cancelled then replays (without `GRACE_PATCH`'s marker)."""
    while True:
        task.cancel()  # again at each cancel, as awaiting the activity itself did
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            continue


def _ended_late(state: RunState, call: ToolCall, task: asyncio.Task[ToolOutcome]) -> None:
    """Record how a tool ended after its run stopped waiting for it (`tool.ended_late`).

    Only a run whose workflow is still open sees it: an agent loop embedded in a host
    workflow that goes on. A closed run's history takes nothing more; its tool's worker
    logs the end instead (activities `_tools`)."""
    if task.cancelled():
        how = "was cancelled"
    elif (error := task.exception()) is None:
        outcome = task.result()
        how = f"failed ({outcome.error_kind})" if outcome.is_error else "completed"
    else:
        cause = (error.cause or error) if isinstance(error, ActivityError) else error
        if isinstance(cause, CancelledError):
            how = "acknowledged the cancel"
        elif isinstance(cause, TimeoutError):
            how = "timed out"
        else:
            kind = cause.type if isinstance(cause, ApplicationError) else None
            how = f"failed ({kind or type(cause).__name__})"
    detail = f"the tool {how} after the run stopped waiting for it"
    if not evicting():
        state.event("tool.ended_late", call, detail=detail)


def _after_cancel(state: RunState, valid: ValidCall, ended: _Ended, attempts: int) -> Executed:
    """What a cancelled call is recorded as. Never a retry: it is being cancelled."""
    if ended == "unknown":
        grace = state.config.cancel_grace_seconds
        return _outcome_unknown(state, valid, attempts, f"did not stop within {grace:g} s")
    if isinstance(ended, ToolOutcome):  # it finished before it saw the cancel, or ignored it
        return Executed(ended, ended.attempt)
    if ended == "cancelled" or isinstance(ended.cause, CancelledError):
        return _cancelled(state, valid)
    if isinstance(ended.cause, TimeoutError):  # its thread may well be running still
        return _outcome_unknown(state, valid, attempts, "timed out instead of stopping")
    return Executed(_failure_outcome(valid, ended), attempts_after(ended.cause, attempts))


def _outcome_unknown(state: RunState, valid: ValidCall, attempts: int, how: str) -> Executed:
    reason = state.cancel_reason or "the run was cancelled"
    unknown = outcome_unknown_text(how, reason)
    outcome = cancelled_outcome(valid.call.id, valid.spec.name, unknown)
    outcome.error_kind = OUTCOME_UNKNOWN
    return Executed(outcome, attempts + 1, outcome_unknown=unknown)


def _cancelled(state: RunState, valid: ValidCall) -> Executed:
    reason = state.cancel_reason or "cancelled"
    outcome = cancelled_outcome(valid.call.id, valid.spec.name, reason)
    return Executed(outcome, 0, cancelled=True)


def run_ending(cause: BaseException | None) -> str | None:
    """The tool's message when a tool activity's failure ends the run (its error was raised
    with `ends_run=True`, which adds the `RUN_ENDING` detail), else None."""
    if not isinstance(cause, ApplicationError) or len(cause.details) < 3:
        return None
    return cause.message if cause.details[2] == RUN_ENDING else None


def _failure_outcome(valid: ValidCall, err: ActivityError) -> ToolOutcome:
    call, spec = valid.call, valid.spec
    cause = err.cause
    if isinstance(cause, ApplicationError):
        kind = cause.type or ErrorKind.EXECUTION.value
        details: Any = cause.details
        text = details[0] if details and isinstance(details[0], str) else None
        return activity_error_outcome(call.id, spec.name, kind, cause.message, text)
    if isinstance(cause, TimeoutError):
        which = cause.type.name.lower().replace("_", "-") if cause.type else "activity"
        safe = spec.safety.safe_to_repeat
        return timeout_outcome(call.id, spec.name, which, safe_to_repeat=safe)
    if isinstance(cause, CancelledError):
        return cancelled_outcome(call.id, spec.name, "the call was cancelled")
    return failure_outcome(call.id, spec.name, str(cause or err))
