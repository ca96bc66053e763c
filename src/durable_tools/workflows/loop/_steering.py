"""Steering: instructions a person gives a run while it works, and skipping a turn's rest.

Every accepted steer reaches the model as a user message before its next turn (the loop
delivers them). A steer with `skip_remaining` also stops the current turn short:

- each call that has not started yet gets the synthetic result
  `skipped: the user steered: <instruction>` (timeline status `skipped`, event
  `tool.skipped`), so every tool call id of the turn is still answered;
- each call waiting for approval stops waiting: its pending approval is withdrawn at once
  (event `approval.withdrawn`), so a decision arriving later is rejected as "no approval
  pending", and the call gets the same synthetic result;
- calls already running (or past their approval) finish: cancelling them is `cancel`'s job.

The skip applies from the moment the steer arrives until the steers are delivered to the
model; one arriving while the model is answering skips every call of that answer.
"""

from __future__ import annotations

from pydantic import ValidationError

from durable_tools.protocol._limits import MAX_PENDING_STEERS, MAX_STEER_CHARS, clip
from durable_tools.protocol._types import Steer
from durable_tools.workflows.calls._record import STEER_NOTE_CHARS
from durable_tools.workflows.gates._decisions import withdraw_undecided
from durable_tools.workflows.run._state import RunState

__all__ = ["InvalidSteer", "accept_steer", "parse_steer"]

_ERROR_CHARS = 500


class InvalidSteer(ValueError):
    """A steer the run refuses (not text, empty, too long, unknown fields)."""


def parse_steer(payload: object) -> Steer:
    """The steer a signal carried: a `Steer` (as a JSON object) or plain text.

    Raises:
        InvalidSteer: naming what is wrong; the caller records it and goes on.
    """
    if isinstance(payload, Steer):
        data: object = payload.model_dump()
    elif isinstance(payload, str):
        data = {"instruction": payload}
    else:
        data = payload
    if not isinstance(data, dict):
        raise InvalidSteer(f"a steer must be text or a Steer object, got {type(payload).__name__}")
    instruction = data.get("instruction")
    if isinstance(instruction, str) and len(instruction) > MAX_STEER_CHARS:
        raise InvalidSteer(
            f"the instruction has {len(instruction):,} characters; the limit is {MAX_STEER_CHARS:,}"
        )
    try:
        steer = Steer.model_validate(data)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in problem['loc']) or '$'}: {problem['msg']}"
            for problem in error.errors(include_url=False, include_input=False)
        )
        raise InvalidSteer(clip(f"not a valid steer: {problems}", _ERROR_CHARS)) from None
    return steer


def accept_steer(state: RunState, payload: object) -> None:
    """Queue a steer for the next model turn, or record why it was refused. Never raises.

    A skip-steer also withdraws every approval still pending, right here in the handler:
    a decision that arrives after it (even in the same workflow task) then finds nothing
    to decide, instead of approving a call the person steered away from.
    """
    try:
        steer = parse_steer(payload)
    except InvalidSteer as error:
        state.event("run.steer_refused", detail=str(error))
        return
    if len(state.steer) >= MAX_PENDING_STEERS:
        state.event(
            "run.steer_refused",
            detail=f"{MAX_PENDING_STEERS} instructions already wait for the next turn",
        )
        return
    state.steer.append(steer.instruction)
    notes = ["mid-turn"] if state.calls.in_turn else []
    if steer.skip_remaining:
        state.skip_steer = steer.instruction
        notes.append("skip remaining calls")
        withdraw_undecided(state.gates)
    prefix = f"[{', '.join(notes)}] " if notes else ""
    state.event("run.steered", detail=prefix + steer.instruction[:STEER_NOTE_CHARS])
