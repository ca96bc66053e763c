"""The call pipeline: how the tool calls of one model turn run, and the route of one call.

    run_calls   strategy (sequential, parallel, batched), idempotency keys, cancellation,
                steering (a skip-steer answers the calls not yet started, `_steering`)
      run_call  validate -> gate (approval, authorization) -> execute -> record

Each stage lives in its own module (`_validate` with the budget, `_approval_gate`,
`_authorization_gate`, `_execute`, `_record`) and works on the run's `RunState`; this
module only wires them. Every tool message the model reads, whichever stage answered, is
built by `_replies` (a refused approval's here, from the gate's reason).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, FailureError

from durable_tools.messages import Message, ToolCall
from durable_tools.protocol._limits import clip
from durable_tools.protocol._records import ToolCallRecord
from durable_tools.protocol._types import RunStatus
from durable_tools.tools import ErrorKind, InvalidArguments
from durable_tools.tools._spec import ToolSpec
from durable_tools.tools._validation import parse_arguments
from durable_tools.workflows.calls._execute import Executed, execute
from durable_tools.workflows.calls._record import (
    mark_cancelled,
    open_record,
    record_outcome,
    skipped_message,
)
from durable_tools.workflows.calls._validate import spend_budget, validate_call
from durable_tools.workflows.catalog._run_catalog import discover, find_tools
from durable_tools.workflows.catalog._tool_search import SEARCH_TOOL
from durable_tools.workflows.catalog._view import has_deferred, offered_tools
from durable_tools.workflows.gates._approval_gate import approve, preflight
from durable_tools.workflows.gates._authorization_gate import authorize
from durable_tools.workflows.run._replies import (
    cancelled_reply,
    denied_reply,
    invalid_reply,
    over_turn_limit_reply,
    result_reply,
    search_reply,
    unprepared_outcome,
)
from durable_tools.workflows.run._run_calls import RunCalls
from durable_tools.workflows.run._state import CallSkipped, EndRun, RunState
from durable_tools.workflows.run._valid_call import ValidCall

__all__ = [
    "TOO_MANY_CALLS",
    "UNAMBIGUOUS_KEYS_PATCH",
    "CallRoute",
    "claim_call_id",
    "key_under",
    "refuse_over_turn_limit",
    "run_call",
    "run_calls",
    "run_nested_call",
    "run_single_call",
]

UNAMBIGUOUS_KEYS_PATCH = "call-keys-unambiguous"
"""Marks a run whose call ids holding `#` always get a `#<n>` key suffix. Histories recorded
before then replay with the keys they had."""

CallRoute = Callable[[RunState, ToolCall, dict[str, ToolSpec]], Awaitable[Message]]
"""How a built-in tool of a layer above the calls answers its call (code mode's
`run_script`): given the run, the call and the tools offered this turn."""

TOO_MANY_CALLS = "TooManyCalls"
"""The error kind of a call over `max_tool_calls_per_turn`: it was not run."""


async def run_calls(
    state: RunState, calls: list[ToolCall], routes: Mapping[str, CallRoute] | None = None
) -> list[Message]:
    """Run one turn's calls by the agent's strategy; one tool message per call, in order.

    `routes` answers the calls of built-in tools by name instead of `run_call`."""
    strategy = state.config.strategy
    offered = offered_tools(state)  # fixed for the whole turn
    if strategy.mode == "sequential":
        width, batch = 1, len(calls)
    elif strategy.mode == "parallel":
        width, batch = strategy.concurrency, len(calls)
    else:
        width, batch = strategy.batch_size, strategy.batch_size
    gate = asyncio.Semaphore(width)
    duplicates = _assign_keys(state, calls)
    state.calls.records = {}
    state.calls.in_turn = True
    try:
        return await _run_groups(state, calls, offered, gate, batch, duplicates, routes or {})
    finally:
        state.calls.in_turn = False


async def run_single_call(state: RunState, call: ToolCall, offered: dict[str, ToolSpec]) -> Message:
    """Run one call outside a model turn (`ToolRuntime.call`), as a turn's call runs.

    The call gets its own idempotency key and is registered as running while it runs (a
    `cancel` reaches it), then takes the route of `run_call`. Calls of the runtime may run
    at the same time, so nothing of the turn (`calls.records`, `calls.in_turn`) is reset
    here; a call id that is running already is refused like an id used twice in one turn
    (the two would share the pending approval).
    """
    if call.id in state.calls.running:
        return await _duplicate(state, call, running=True)
    claim_call_id(state, call.id)
    state.calls.records.pop(call.id, None)  # an id used before: its old record is not this call's
    task = asyncio.create_task(_bounded(state, asyncio.Semaphore(1), call, offered, run_call))
    state.calls.running[call.id] = task
    try:
        return await task
    finally:
        state.calls.running.pop(call.id, None)


async def run_nested_call(
    state: RunState, call: ToolCall, offered: dict[str, ToolSpec], *, parent: str
) -> Message:
    """Run a call that a script call makes (code mode) in the script call's task, on the
    route of `run_call`: registered as running meanwhile (a cancel of the run reaches the
    nested call's tool too), recorded as cancelled when a cancel stops it."""
    task = asyncio.current_task()
    if task is not None:
        state.calls.running[call.id] = task
    try:
        return await run_call(state, call, offered, parent=parent)
    except asyncio.CancelledError:
        mark_cancelled(state.calls, call)
        raise
    finally:
        state.calls.running.pop(call.id, None)


def refuse_over_turn_limit(state: RunState, over: list[ToolCall]) -> list[Message]:
    """Answer the calls over `max_tool_calls_per_turn` with an error naming the limit.

    Like an invalid call, each is in the timeline (status `invalid`) and the events
    (`tool.invalid_args`), and the model reads, under the call's own id, why it did not
    run and that it may ask again.
    """
    limit = state.config.limits.max_tool_calls_per_turn
    asked = limit + len(over)
    messages: list[Message] = []
    for call in over:
        record = open_record(state, call)
        record.status = "invalid"
        record.error_kind = TOO_MANY_CALLS
        record.result = (
            f"not run: {asked} calls in one turn, over max_tool_calls_per_turn ({limit})"
        )
        state.event("tool.invalid_args", call, detail=record.result, error_kind=TOO_MANY_CALLS)
        messages.append(over_turn_limit_reply(call.id, call.name, asked, limit, workflow.now()))
    return messages


async def _run_groups(
    state: RunState,
    calls: list[ToolCall],
    offered: dict[str, ToolSpec],
    gate: asyncio.Semaphore,
    batch: int,
    duplicates: set[int],
    routes: Mapping[str, CallRoute],
) -> list[Message]:
    # Sequential calls share one gate of width 1: each waits for the previous one, then
    # checks for a cancel or a skip-steer before it starts (in `_bounded`). Batches run one
    # after another, so a later batch's calls check after the earlier batch finished.
    results: list[Message] = []
    for start in range(0, len(calls), max(batch, 1)):
        group = calls[start : start + batch]
        if state.cancel_reason is not None:
            results.extend(_cancelled_message(state, call) for call in group)
            continue
        tasks = [
            asyncio.create_task(
                _duplicate(state, call)
                if start + i in duplicates
                else _bounded(state, gate, call, offered, routes.get(call.name, run_call))
            )
            for i, call in enumerate(group)
        ]
        for i, (call, task) in enumerate(zip(group, tasks, strict=True)):
            if start + i not in duplicates:
                state.calls.running[call.id] = task
        try:
            results.extend(await asyncio.gather(*tasks))
        finally:
            for call in group:
                state.calls.running.pop(call.id, None)
    return results


async def run_call(
    state: RunState, call: ToolCall, offered: dict[str, ToolSpec], *, parent: str | None = None
) -> Message:
    """The route of one call: validate, gate, execute, record.

    `parent`: the call id of the script that made this call (code mode), for the timeline.
    """
    record = open_record(state, call, parent=parent)
    if call.name == SEARCH_TOOL and has_deferred(state):
        return _search_tools(state, call, record)
    valid = validate_call(state, call, offered, record)
    if isinstance(valid, Message):
        return valid
    if (over_budget := spend_budget(state, valid, record)) is not None:
        return over_budget
    try:
        gate = await approve(state, valid, record)
        if gate.refusal is not None:
            return denied_reply(call.id, valid.spec.name, gate.refusal)
        checked = gate.preflight
        while True:
            grant = await authorize(state, valid, record, checked)
            if isinstance(grant, Message):
                return grant
            executed = await execute(state, valid, record, grant)
            outcome = record_outcome(state, valid, record, executed)
            if executed.ends_run is not None:
                why = f"tool call {call.id} ({valid.spec.name}) ended the run: {executed.ends_run}"
                raise EndRun(RunStatus.FAILED, why)
            if outcome.error_kind != ErrorKind.UNAUTHORIZED.value or valid.spec.oauth is None:
                return result_reply(call.id, valid.spec.name, outcome)
            # The token was revoked or lacks a scope: ask the user again, then retry.
            state.event("tool.unauthorized", call, detail="token rejected; re-authorizing")
            checked = await preflight(state, valid, force=True)
    except ActivityError as err:  # the preflight failed (OAuth not configured, ...)
        return _unprepared(state, valid, record, err)


def _unprepared(
    state: RunState, valid: ValidCall, record: ToolCallRecord, err: ActivityError
) -> Message:
    cause = err.cause
    why = cause.message if isinstance(cause, FailureError) else str(err)
    outcome = unprepared_outcome(valid.call.id, valid.spec.name, why)
    record_outcome(state, valid, record, Executed(outcome, 0))
    return result_reply(valid.call.id, valid.spec.name, outcome)


def _assign_keys(state: RunState, calls: list[ToolCall]) -> set[int]:
    """Give each call its idempotency key; return the indexes of in-turn duplicates.

    The key is `<workflow id>/<call id>`; a call id the model already used in an
    earlier turn gets `#<n>` appended, so two different calls never share a key. Once a
    long chain stopped carrying the ids it used (`CALL_IDS_CARRIED`), the key names the
    run of the chain instead, `<workflow id>@<run>/<call id>`, and `#<n>` counts the
    uses in this run: no key of an earlier run has that form.
    """
    seen: set[str] = set()
    duplicates: set[int] = set()
    for index, call in enumerate(calls):
        if call.id in seen:
            duplicates.add(index)
            continue
        seen.add(call.id)
        claim_call_id(state, call.id)
    return duplicates


def claim_call_id(state: RunState, call_id: str) -> None:
    """Count a use of `call_id` and give its call an idempotency key no other call has.

    The key is `<workflow id>/<call id>`, with `#<n>` when the id was used before (see
    `_assign_keys`). An id that itself holds `#` always gets `#<n>` (`#0` the first time):
    otherwise the model's id `a#1` would share the key of the second call named `a`.
    """
    workflow_id = workflow.info().workflow_id
    if state.calls.ids_dropped:
        workflow_id = f"{workflow_id}@{state.continued}"
    uses = state.calls.uses.get(call_id, 0)
    state.calls.uses[call_id] = uses + 1
    suffixed = uses > 0 or ("#" in call_id and workflow.patched(UNAMBIGUOUS_KEYS_PATCH))
    state.calls.keys[call_id] = f"{workflow_id}/{call_id}" + (f"#{uses}" if suffixed else "")


def key_under(calls: RunCalls, call_id: str, parent: str, n: int) -> None:
    """The idempotency key of a script's `n`-th nested call as runs recorded before
    `HOST_IDS_CLAIMED_PATCH` gave it: the script call's key with `/<n>`."""
    calls.keys[call_id] = f"{calls.keys[parent]}/{n}"


async def _duplicate(state: RunState, call: ToolCall, *, running: bool = False) -> Message:
    where = "a call still running" if running else "another call of the same turn"
    unique = "is used by a call still running" if running else "is not unique in this turn"
    error = InvalidArguments(
        f"call id {call.id!r} is used by {where}",
        errors=[f"$: call id {call.id!r} {unique}; give each call its own id"],
    )
    state.event("tool.invalid_args", call, detail=error.message)
    return invalid_reply(call.id, call.name, error, at=workflow.now())


async def _bounded(
    state: RunState,
    gate: asyncio.Semaphore,
    call: ToolCall,
    offered: dict[str, ToolSpec],
    route: CallRoute,
) -> Message:
    try:
        async with gate:
            state.check_call_cancelled()
            state.check_call_skipped()
            message = await route(state, call, offered)
            if message.at is None:
                message = message.model_copy(update={"at": workflow.now()})
            return message
    except CallSkipped:  # before it started, or while it waited for approval
        return skipped_message(state, call)
    except asyncio.CancelledError:
        if state.cancel_reason is None:
            raise  # the whole run is being cancelled through Temporal
        return _cancelled_message(state, call)


def _cancelled_message(state: RunState, call: ToolCall) -> Message:
    """Answer a call that the run's cancel stopped before it ran; record it as cancelled."""
    mark_cancelled(state.calls, call)
    reason = state.cancel_reason or "the run was cancelled"
    return cancelled_reply(call.id, call.name, reason, workflow.now())


def _search_tools(state: RunState, call: ToolCall, record: ToolCallRecord) -> Message:
    try:
        arguments: dict[str, Any] = parse_arguments(call.arguments)
        query = str(arguments.get("query", ""))[:500]
    except InvalidArguments as error:
        record.status = "invalid"
        return invalid_reply(call.id, call.name, error)
    found = find_tools(state, query, limit=5)
    discover(state.catalog, found)  # the next model call sends the new set
    record.status = "completed"
    record.result = ", ".join(s.name for s in found) or "no match"
    state.event("tool.search", call, detail=record.result)
    # The summary line only: the full description comes with the definition next turn.
    lines = [f"- {s.name}: {clip(s.description.strip().split(chr(10))[0], 300)}" for s in found]
    return search_reply(call.id, call.name, lines, query)
