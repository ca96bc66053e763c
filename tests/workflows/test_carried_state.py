"""A run continued by an earlier release starts on this code: the carried state is a wire
shape, and each of its fields lands in the part of `RunState` that owns it.

The input is the one recorded in `histories/continued.json`: a run that continued as new
twice, written before the state was split by role (and before the carried state had
usage, policy, standing grants, budgets or the packed catalog). `test_replay` replays
that history; this checks the parts it starts from and that carrying them on gives the
same wire fields back.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from durable_tools.messages import Usage
from durable_tools.workflows import AgentInput
from durable_tools.workflows.run._carry import carry_state, start_state

HISTORY = Path(__file__).parent / "histories" / "continued.json"


def _recorded_input() -> tuple[AgentInput, dict[str, Any]]:
    """The continued run's input, and its carried state as the JSON that was sent."""
    history = json.loads(HISTORY.read_text())
    started = history["events"][0]["workflowExecutionStartedEventAttributes"]
    sent = json.loads(base64.b64decode(started["input"]["payloads"][0]["data"]))
    return AgentInput.model_validate(sent), sent["carried"]


def test_a_carried_state_of_the_older_shape_fills_each_part() -> None:
    input, sent = _recorded_input()
    carried = input.carried
    assert carried is not None and carried.call_uses  # the recorded run used call ids
    state = start_state(input)

    assert [s.name for s in state.catalog.specs] == [s["name"] for s in sent["catalog"]]
    assert state.catalog.packed is None and state.catalog.max_advertised is None
    assert state.catalog.discovered == sent["discovered"]
    assert state.calls.uses == sent["call_uses"] and not state.calls.ids_dropped
    assert state.calls.budget_used == {}
    assert state.gates.policy == input.config.approval  # none carried: the config's
    assert state.gates.standing_grants == []
    assert state.model.usage == Usage() and state.model.context is None
    assert (state.turn, state.tool_calls, state.continued) == (
        sent["turn"],
        sent["tool_calls"],
        sent["continued"],
    )
    assert len(state.timeline) == len(sent["timeline"])
    # Nothing waits in a run that just started.
    assert all(not waits.pending and not waits.answered for waits in state.gates.every)


def test_carrying_a_state_on_gives_back_the_fields_it_came_with() -> None:
    input, _ = _recorded_input()
    carried = input.carried
    assert carried is not None
    state = start_state(input)
    again = carry_state(state, state.conversation, state.offset)
    # Compared as read by this release (a record may have gained fields with defaults).
    for name in ("catalog", "discovered", "call_uses", "turn", "tool_calls", "timeline", "events"):
        assert getattr(again, name) == getattr(carried, name), name
    assert again.continued == carried.continued + 1
    assert again.policy is None and again.standing_grants == []  # still the config's
    assert again.usage == Usage() and again.budget_used == {}
