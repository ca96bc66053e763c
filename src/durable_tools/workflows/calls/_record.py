"""Stage 4 of a call: record what happened in the timeline and the event log (and
open the call's timeline entry when its route starts)."""

from __future__ import annotations

import json
from typing import Any

from temporalio import workflow

from durable_tools.messages import Message, ToolCall
from durable_tools.protocol._limits import clip
from durable_tools.protocol._records import ToolCallRecord
from durable_tools.tools import ToolOutcome
from durable_tools.tools._context import MAX_TOOL_EVENTS
from durable_tools.tools._progress import MAX_PROGRESS_MESSAGE_CHARS
from durable_tools.workflows.calls._execute import Executed
from durable_tools.workflows.run._replies import skipped_reply
from durable_tools.workflows.run._run_calls import RunCalls
from durable_tools.workflows.run._state import RunState
from durable_tools.workflows.run._valid_call import ValidCall

__all__ = [
    "MAX_DETAILS_BYTES",
    "STEER_NOTE_CHARS",
    "mark_cancelled",
    "open_record",
    "record_outcome",
    "skipped_message",
]

STEER_NOTE_CHARS = 200
"""A steer's instruction is cut to this length in a skipped call's result and in events."""

MAX_DETAILS_BYTES = 2_000
"""Largest structured value (as JSON) kept as `details` in the timeline and the events.

Both are carried over continue-as-new (up to 500 entries each), so a bigger value would
crowd the carried input; it stays available in the tool's artifacts when it was stored."""


def open_record(state: RunState, call: ToolCall, *, parent: str | None = None) -> ToolCallRecord:
    """Start the call's timeline entry (`parent`: the script call that made it)."""
    record = ToolCallRecord(
        call_id=call.id,
        tool=call.name[:64],
        turn=state.turn,
        arguments=call.arguments[:160],
        status="running",
        parent_call_id=parent,
    )
    state.timeline.append(record)
    state.calls.records[call.id] = record
    return record


def record_outcome(
    state: RunState, valid: ValidCall, record: ToolCallRecord, executed: Executed
) -> ToolOutcome:
    """Write the call's final status, result, attempts, artifacts and details; emit its
    closing event (with transport, attempt, duration, error kind, artifacts, details).

    It works from the validated call: the tool is the one validation resolved (an alias
    the model used included), not looked up again by the name the model wrote."""
    call = valid.call
    outcome = executed.outcome
    record.finished_at = workflow.now()
    transport = valid.transport
    duration_ms = (
        (record.finished_at - record.started_at).total_seconds() * 1000
        if record.started_at is not None
        else None
    )
    if executed.outcome_unknown is not None:
        # Nobody knows whether it stopped: the error kind says so, and the result leads
        # with it (`show` clips it). How the tool ends later, its worker logs.
        record.status = "outcome_unknown"
        record.attempts = max(executed.attempts, 1)
        record.result = executed.outcome_unknown[:300]
        record.error_kind = outcome.error_kind
        state.event(
            "tool.outcome_unknown",
            call,
            detail=record.result,
            transport=transport,
            attempt=record.attempts,
            duration_ms=duration_ms,
            error_kind=outcome.error_kind,
        )
        return outcome
    if executed.cancelled:
        record.status = "cancelled"
        state.event(
            "tool.cancelled",
            call,
            detail=state.cancel_reason,
            transport=transport,
            duration_ms=duration_ms,
        )
        return outcome
    record.attempts = max(executed.attempts, 1)
    record.result = outcome.content[:300]
    record.error_kind = outcome.error_kind
    record.artifacts = list(outcome.artifacts)
    record.details = _bounded_details(outcome.structured)
    if outcome.skipped is not None:
        # A before-hook skipped the call: the tool never ran, and `tool.skipped` closes the
        # call instead of `tool.completed`. Its `tool.started` (the call was scheduled)
        # stays: a follower may have delivered it already, and an event's `seq` is its
        # place in the stream, which `events_since` counts on.
        record.status = "skipped"
        state.event(
            "tool.skipped",
            call,
            detail=outcome.skipped[:300],
            transport=transport,
            duration_ms=duration_ms,
        )
        return outcome
    if outcome.is_error:
        record.status = "failed"
    else:
        record.status = "completed"
    # What the tool wrote to the stream (`ToolContext.emit`), bounded here too: the
    # outcome is an activity's result, and a worker of another version may have built it.
    for note in outcome.events[:MAX_TOOL_EVENTS]:
        state.event(
            "tool.event",
            call,
            detail=note.detail[:MAX_PROGRESS_MESSAGE_CHARS],
            transport=transport,
            details=_bounded_details(note.data),
        )
    state.event(
        "tool.failed" if outcome.is_error else "tool.completed",
        call,
        detail=outcome.error_kind,
        transport=transport,
        attempt=record.attempts,
        duration_ms=duration_ms,
        error_kind=outcome.error_kind,
        artifacts=record.artifacts,
        details=record.details,
    )
    if executed.ends_run is not None:
        state.event(
            "tool.ended_run",
            call,
            detail=clip(executed.ends_run, 300),
            transport=transport,
            error_kind=outcome.error_kind,
        )
    return outcome


def mark_cancelled(calls: RunCalls, call: ToolCall) -> None:
    """Record a call that the run's cancel stopped before it ran (or while it waited)."""
    record = calls.records.get(call.id)
    if record is not None and record.status in (
        "running",
        "awaiting_approval",
        "awaiting_authorization",
        "awaiting_input",
    ):
        record.status = "cancelled"


def skipped_message(state: RunState, call: ToolCall) -> Message:
    """Answer a call that a skip-steer stopped before it ran; record it as skipped."""
    instruction = " ".join((state.skip_steer or "").split())
    short = clip(instruction, STEER_NOTE_CHARS)
    reply = skipped_reply(call.id, call.name, short, workflow.now())
    record = state.calls.records.get(call.id)
    if record is None:
        record = open_record(state, call)
    elif record.status == "awaiting_approval":
        state.event("approval.withdrawn", call, detail="the user steered: " + short)
    record.status = "skipped"
    record.result = (reply.content or "")[:300]
    record.finished_at = workflow.now()
    state.event("tool.skipped", call, detail=short)
    return reply


def _bounded_details(value: Any) -> Any:
    """`value` when its JSON fits `MAX_DETAILS_BYTES`, else None."""
    if value is None:
        return None
    try:
        size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    except (TypeError, ValueError):
        return None
    return value if size <= MAX_DETAILS_BYTES else None
