"""Stage 3, for a callback tool: publish the call and wait for a client to answer it.

A callback tool has a schema but no worker body. Once the call has passed validation and
the approval and authorization gates, no activity is scheduled: the call is published
(`GateState.callbacks`, the `pending_callbacks` query, an event, a notification, the
`awaiting_callback` status and the UI's details: `_wait`) and the run waits durably, up
to the tool's timeout, for a `callback_result` update. The update's validator
(`check_callback_result`) rejects, before anything enters history, an answer that is
malformed, too large, bound to another request, for an unknown or finished call, holds
NaN or an infinity, or whose output breaks the tool's output schema (the call then stays
pending). An accepted answer becomes a `ToolOutcome` bounded like a tool activity's result; a passed
deadline becomes a timeout error the model sees.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic import ValidationError
from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

from durable_tools._activities._callback import CALLBACK_RESULT_ACTIVITY, CallbackOutput
from durable_tools.protocol._callback_types import (
    CALLBACK_ALREADY_ANSWERED,
    CALLBACK_INVALID,
    CALLBACK_OUTPUT_INVALID,
    CALLBACK_UNKNOWN,
    CallbackResult,
    PendingCallback,
    request_hash,
)
from durable_tools.protocol._client_tools import CLIENT_TOOL_SOURCE
from durable_tools.protocol._limits import MAX_CALLBACK_RESULT_BYTES, clip, payload_bytes
from durable_tools.protocol._records import ToolCallRecord
from durable_tools.tools import ToolExecutionError, ToolOutcome, ToolTimeout
from durable_tools.tools._formatting import error_outcome, format_result, to_tool_result
from durable_tools.tools._spec import ToolSpec
from durable_tools.tools._validation import (
    format_schema_errors,
    schema_validator,
)
from durable_tools.workflows.gates._wait import (
    accept,
    answer_of,
    check_finite,
    check_size,
    close_wait,
    expire_wait,
    open_wait,
    wait_for_answer,
    waiting_call,
)
from durable_tools.workflows.run._catalog_state import CatalogState
from durable_tools.workflows.run._state import RunState
from durable_tools.workflows.run._valid_call import ValidCall

__all__ = ["accept_callback_result", "await_client", "check_callback_result"]

WAITING = "waiting for a client to run it (callback tool)"
"""The call's timeline result while it is published: what `show` prints for it."""


def _deadline_seconds(spec: ToolSpec) -> float:
    policy = spec.policy
    return policy.schedule_to_close_timeout or policy.start_to_close_timeout


async def await_client(state: RunState, valid: ValidCall, record: ToolCallRecord) -> ToolOutcome:
    """Publish the call and wait for its answer, the run's cancel, or the deadline.

    Raises:
        asyncio.CancelledError: the run's cancel stopped the wait (`execute` answers it).
    """
    call, spec = valid.call, valid.spec
    seconds = _deadline_seconds(spec)
    now = workflow.now()
    key = state.calls.keys[call.id]
    pending = PendingCallback(
        call_id=call.id,
        tool=spec.name,
        arguments=valid.arguments,
        request_hash=request_hash(key, spec.name, valid.arguments),
        idempotency_key=key,
        published_at=now,
        deadline=now + timedelta(seconds=seconds),
        client=spec.source == CLIENT_TOOL_SOURCE,
    )
    waits = state.gates.callbacks
    record.result = WAITING
    state.event("tool.started", call, transport="callback", attempt=1)
    open_wait(state, waits, call, pending, detail=f"hash {pending.request_hash[:12]}")
    try:
        # A skip-steer does not stop it: like a running tool, a published call may be
        # executing on the client already, and finishes.
        if not await wait_for_answer(state, waits, call.id, seconds):
            expire_wait(state, waits, call, pending, detail=f"no answer within {seconds:g}s")
            expired = ToolTimeout(f"no client answered this callback tool within {seconds:g}s")
            return error_outcome(call.id, spec.name, expired)
    finally:
        close_wait(state, waits, call.id)
    answer = answer_of(state, waits, call.id, take=True)
    assert answer is not None  # nothing else wakes a callback's wait
    if answer.error is not None:
        # Within the run's output limit, as any tool result (the limit is in bytes).
        text = clip(answer.error, max(state.config.output_limit_bytes // 4, 60))
        failure = ToolExecutionError(f"the client's tool failed: {text}")
        return error_outcome(call.id, spec.name, failure)
    return await _bounded(state, valid, answer.output)


async def _bounded(state: RunState, valid: ValidCall, output: Any) -> ToolOutcome:
    """The output as the model gets it, bounded like a tool activity's result.

    A small output is formatted here. One over the run's output limit is formatted by an
    activity, as a tool's is: the whole output goes to the worker's artifact store and the
    model gets a head and the reference. Should that fail, the output is cut here: the
    whole of it stays readable in history (the update's argument).
    """
    call, spec = valid.call, valid.spec
    limit = state.config.output_limit_bytes
    if payload_bytes(output) > limit:
        request = CallbackOutput(
            call_id=call.id,
            tool_name=spec.name,
            output=output,
            limit_bytes=limit,
            redact=list(spec.safety.redact),
        )
        try:
            stored: ToolOutcome = await workflow.execute_activity(
                CALLBACK_RESULT_ACTIVITY,
                request,
                result_type=ToolOutcome,
                start_to_close_timeout=timedelta(seconds=60),
                retry_policy=RetryPolicy(maximum_attempts=3),
                summary=f"store the result of {spec.name} {call.id}",
            )
            return stored
        except ActivityError as err:
            state.event("callback.store_failed", call, detail=str(err.cause or err)[:300])
    return format_result(
        to_tool_result(output),
        call_id=call.id,
        tool_name=spec.name,
        limit_bytes=limit,
        redact=spec.safety.redact,
    )


def _reject(message: str, kind: str) -> ApplicationError:
    return ApplicationError(message, type=kind, non_retryable=True)


def _parse(raw: Any) -> CallbackResult:
    if isinstance(raw, CallbackResult):
        return raw
    if not isinstance(raw, dict):
        raise _reject(
            "callback_result takes an object {call_id, request_hash, output | error}, "
            f"got {type(raw).__name__}",
            CALLBACK_INVALID,
        )
    try:
        return CallbackResult.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "$"
        raise _reject(
            f"callback_result is malformed at {where}: {first['msg']}", CALLBACK_INVALID
        ) from None


def check_callback_result(state: RunState, raw: Any) -> None:
    """The `callback_result` update's validator: reject what must not enter history.

    Raises:
        ApplicationError: typed `CallbackInvalid`, `CallbackUnknown`,
            `CallbackAlreadyAnswered` or `CallbackOutputInvalid`, with the reason.
    """
    try:
        check_size(
            raw,
            MAX_CALLBACK_RESULT_BYTES,
            "callback_result",
            ": return a smaller result (or a reference to where the data is)",
        )
    except ValueError as err:
        raise _reject(str(err), CALLBACK_INVALID) from None
    answer = _parse(raw)
    waits = state.gates.callbacks
    pending = waiting_call(waits, answer.call_id)
    if pending is None:
        if answer.call_id in waits.answered or _was_called(state, answer.call_id):
            raise _reject(
                f"callback call {answer.call_id!r} is already answered or ended",
                CALLBACK_ALREADY_ANSWERED,
            )
        raise _reject(
            f"no callback call {answer.call_id!r} was published by this run", CALLBACK_UNKNOWN
        )
    if answer.request_hash != pending.request_hash:
        raise _reject(
            f"request_hash does not match callback call {answer.call_id!r}: the answer is "
            "for another request (a reused call id?); read pending_callbacks again",
            CALLBACK_INVALID,
        )
    if answer.error is None:
        try:
            # A `number` schema takes NaN and Infinity, which the model would read as
            # non-JSON.
            check_finite(
                answer.output,
                "$.output",
                "callback_result",
                ", or null or a string for a value that has none",
            )
        except ValueError as err:
            raise _reject(str(err), CALLBACK_INVALID) from None
        _check_output(state.catalog, pending, answer.output)


def _was_called(state: RunState, call_id: str) -> bool:
    return call_id in state.calls.records or any(r.call_id == call_id for r in state.timeline)


def _check_output(catalog: CatalogState, pending: PendingCallback, output: Any) -> None:
    spec = next((s for s in catalog.specs if s.name == pending.tool), None)
    if spec is None or spec.output_schema is None or not spec.validates_output:
        return
    validator = schema_validator(f"{spec.name}#output", spec.output_schema)
    lines = format_schema_errors(validator.iter_errors(output))
    if lines:
        raise _reject(
            f"the output breaks the output schema of {spec.name!r}: {'; '.join(lines[:5])}",
            CALLBACK_OUTPUT_INVALID,
        )


def accept_callback_result(state: RunState, raw: Any) -> str:
    """The `callback_result` update: record the (validated) answer; the first one wins."""
    answer = _parse(raw)
    if accept(state.gates.callbacks, answer.call_id, answer) != "accepted":
        return "already answered"
    pending = state.gates.callbacks.pending[answer.call_id]
    state.event(
        "callback.answered",
        tool=pending.tool,
        call_id=answer.call_id,
        detail="error" if answer.error is not None else "output",
    )
    return "accepted"
