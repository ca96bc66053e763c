"""The durable wait: a tool call paused until it is answered, its deadline passes, or the
run is cancelled (or, for an approval, a steer withdraws it).

Every gate that pauses a call (approval, authorization, callback, input) goes through
the same steps, so every wait is seen the same way:

- `open_wait` records what the call waits for in the kind's `Waits`, emits the kind's
  requested event, notifies the agent's targets (and counts an approval in the metrics)
  and publishes: `AgentStatus` says what the run waits for, `AwaitingTool` names the
  tool, the UI's details say how to resume it, and `durable-tools pending` lists it.
  `renew_wait` tells the same of a wait whose terms changed (an approval escalated).
- `wait_for_answer` waits durably (`workflow.wait_condition`, a timer for the deadline);
  `answer_of` then ends the call on a cancel or a skip, or gives the answer (telling the
  targets and the metrics of an approval's decision).
- `expire_wait` says the deadline passed (event and notification); `close_wait`, in a
  `finally`, forgets the wait and publishes again.

The update validators share `check_call_id`, `waiting_call`, `check_size`,
`check_finite` and `accept`: the call must be waiting, answered once, and the answer
small and JSON-finite. What is a gate's own (quorum and escalation, reissue, request
hash and output bounds, question rounds) stays in the gate.

Input and callback waits were not shown before `WAITS_SHOWN_PATCH`: runs recorded
without its marker replay them as they ran (no status, notification or default deadline).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypeVar

from temporalio import workflow

from durable_tools.messages import ToolCall
from durable_tools.protocol._limits import MAX_CALL_ID_CHARS, clip, payload_bytes
from durable_tools.protocol._notification_types import NotificationEvent
from durable_tools.tools._validation import non_finite_number
from durable_tools.workflows.catalog._run_catalog import note_durable_wait
from durable_tools.workflows.observe._notify import WaitingCall, notify_wait
from durable_tools.workflows.observe._visibility import evicting, publish
from durable_tools.workflows.run._state import RunState
from durable_tools.workflows.run._wait_maps import Waits

__all__ = [
    "MAX_TIMER_SUMMARY_CHARS",
    "WAITS_SHOWN_PATCH",
    "accept",
    "answer_of",
    "check_call_id",
    "check_finite",
    "check_size",
    "close_wait",
    "expire_wait",
    "open_wait",
    "renew_wait",
    "shows",
    "wait_for_answer",
    "waiting_call",
]

MAX_TIMER_SUMMARY_CHARS = 200
"""A deadline timer's summary (kept in the history) is cut to this length."""

WAITS_SHOWN_PATCH = "waits-shown"
"""Marks runs that show input and callback waits like approvals: `AgentStatus`
`awaiting_input` / `awaiting_callback`, `AwaitingTool`, notifications, and an input wait's
default deadline (`AgentConfig.input_timeout_seconds`). Each adds commands (upserts,
activities, a timer) that runs recorded before would not replay. Asked when such a wait
opens, and only then."""

P = TypeVar("P", bound=WaitingCall)
A = TypeVar("A")


def shows(waits: Waits[Any, Any]) -> bool:
    """Whether this run shows waits of this kind (asks `WAITS_SHOWN_PATCH` for the kinds
    runs did not show before it; the SDK remembers the answer for the run)."""
    if not waits.kind.always_shown:
        waits.shown = workflow.patched(WAITS_SHOWN_PATCH)
    return waits.shown


def _publishes(waits: Waits[Any, Any]) -> bool:
    return waits.shown or waits.kind.published_unshown


def open_wait(
    state: RunState,
    waits: Waits[P, Any],
    call: ToolCall,
    pending: P,
    *,
    detail: str | None = None,
    details: Any = None,
) -> None:
    """Start showing `call` as waiting for `pending`: event, notification, status."""
    kind = waits.kind
    shows(waits)
    waits.answered.pop(call.id, None)  # a reused call id starts unanswered
    waits.pending[call.id] = pending
    state.event(kind.requested, call, detail=detail, details=details)
    renew_wait(state, waits, kind.requested, pending)


def renew_wait(state: RunState, waits: Waits[P, Any], event: NotificationEvent, pending: P) -> None:
    """Tell the targets and the status that a call waits for `pending`: opened, or its
    terms changed (an approval escalated; the caller emits the run's event first)."""
    if waits.shown:
        notify_wait(state, event, pending)
    if _publishes(waits):
        publish(state)


async def wait_for_answer(
    state: RunState,
    waits: Waits[Any, Any],
    call_id: str,
    timeout: float | timedelta | None,
    *,
    wake: Callable[[], bool] | None = None,
    summary: str | None = None,
) -> bool:
    """Wait durably until the call is answered, the run cancelled, the wait withdrawn by
    a steer (skippable kinds), or `wake` says so: True. False when `timeout` passed first.

    `summary` names the deadline's timer in the Temporal UI (default "<kind> deadline:
    <tool> <call id>", so the timeline reads "approval deadline: refund r1", not "1h").
    """
    if summary is None:
        tool = getattr(waits.pending.get(call_id), "tool", "")
        summary = f"{waits.kind.name} deadline: {tool} {call_id}".replace("  ", " ")
    summary = clip(summary, MAX_TIMER_SUMMARY_CHARS)
    skippable = waits.kind.skippable
    try:
        await workflow.wait_condition(
            lambda: (
                call_id in waits.answered
                or state.cancel_reason is not None
                or (skippable and state.skip_steer is not None)
                or (wake is not None and wake())
            ),
            timeout=timeout,
            timeout_summary=summary,
        )
    except builtins.TimeoutError:
        return False
    finally:
        note_durable_wait(state)  # the worker's tools may have changed meanwhile
    return True


def answer_of(state: RunState, waits: Waits[Any, A], call_id: str, *, take: bool) -> A | None:
    """After `wait_for_answer`: the call's answer (removed from the map when `take`), or
    None when something else woke the wait (`wake`).

    Raises:
        asyncio.CancelledError: the run's cancel ended the wait.
        CallSkipped: a steer withdrew the wait (skippable kinds).
    """
    state.check_call_cancelled()
    if call_id not in waits.answered:
        if waits.kind.skippable:
            state.check_call_skipped()
        return None
    answer = waits.answered.pop(call_id) if take else waits.answered[call_id]
    pending = waits.pending.get(call_id)
    if waits.kind.answered is not None and waits.shown and pending is not None:
        notify_wait(state, waits.kind.answered, pending, answer)
    return answer


def expire_wait(
    state: RunState, waits: Waits[P, Any], call: ToolCall, pending: P, *, detail: str | None = None
) -> None:
    """Say that the call's deadline passed before an answer: event and notification."""
    state.event(waits.kind.expired, call, detail=detail)
    if waits.shown:
        notify_wait(state, waits.kind.expired, pending)


def close_wait(state: RunState, waits: Waits[Any, Any], call_id: str) -> None:
    """Forget the wait (whatever ended it) and publish; call it in a `finally`."""
    waits.pending.pop(call_id, None)
    if _publishes(waits) and not evicting():
        publish(state)


def accept(waits: Waits[Any, A], call_id: str, answer: A) -> str:
    """An update's handler, after its validator: record the answer; the first one wins."""
    if call_id not in waits.pending or call_id in waits.answered:
        return "already answered"
    waits.answered[call_id] = answer
    return "accepted"


# --------------------------------------------------------------------- validators


def check_call_id(call_id: object) -> str:
    """The call id an update names, checked for type and size.

    Raises:
        ValueError: not text, empty, or longer than `MAX_CALL_ID_CHARS`.
    """
    if not isinstance(call_id, str) or not call_id or len(call_id) > MAX_CALL_ID_CHARS:
        raise ValueError(f"a call id must be text of at most {MAX_CALL_ID_CHARS} characters")
    return call_id


def waiting_call(waits: Waits[P, Any], call_id: str) -> P | None:
    """What the call waits for, if it waits and is not answered yet."""
    if call_id in waits.answered:
        return None
    return waits.pending.get(call_id)


def check_size(value: Any, limit: int, what: str, hint: str = "") -> None:
    """Refuse a value that cannot be encoded, or is larger than `limit` bytes encoded.

    Raises:
        ValueError: says which, naming `what`; `hint` follows the size message.
    """
    try:
        size = payload_bytes(value)
    except Exception as err:  # not encodable (too deep for the converter, ...)
        raise ValueError(f"{what} cannot be encoded: {err}"[:300]) from None
    if size > limit:
        raise ValueError(f"{what} is {size} bytes, over the {limit}-byte limit{hint}")


def check_finite(value: Any, where: str, what: str, hint: str = "") -> None:
    """Refuse NaN and the infinities: a `number` schema takes them, JSON cannot hold them.

    Raises:
        ValueError: names the first place that holds one.
    """
    found = non_finite_number(value, where)
    if found is not None:
        raise ValueError(
            f"{what} has a number JSON cannot hold at {found}: send a finite number{hint}"
        )
