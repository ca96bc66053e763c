"""Each part of the run's state is changed only by the role package that owns it.

`bench.state_use` reads the source with `ast` and counts assignments to a part's fields
made outside its owner (`x.field = ...`, `x.field[...] = ...`, `x.field += ...`, through
a parameter, a local or `self.<attribute>` holding the part or the `RunState` above it).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo's bench/
from bench.state_use import PARTS, measure


def test_no_part_of_the_run_state_is_assigned_outside_its_owner() -> None:
    figures = measure()
    outside = {part: figures.assignments[part] for part in PARTS if part != "RunState"}
    assert outside == dict.fromkeys(outside, 0), "\n".join(figures.places)


def test_the_count_sees_each_form_of_assignment(tmp_path: Path) -> None:
    package = tmp_path / "durable_tools"
    (package / "workflows" / "run").mkdir(parents=True)
    (package / "workflows" / "loop").mkdir(parents=True)
    (package / "workflows" / "run" / "_state.py").write_text(
        "class RunState:\n    gates: GateState\n    calls: RunCalls\n"
        "class GateState:\n    approvals: Waits[str, int]\n    reissue: set[str]\n"
        "class RunCalls:\n    uses: dict[str, int]\n    in_turn: bool\n"
    )
    (package / "workflows" / "loop" / "_x.py").write_text(
        "class Holder:\n"
        "    _state: RunState\n"
        "    def handler(self) -> None:\n"
        "        state = self._state\n"
        "        state.gates.approvals.answered['c'] = 1\n"  # through a local
        "        self._state.calls.uses['c'] += 1\n"  # through self, augmented
        "def stage(state: 'RunState', gates: GateState) -> None:\n"
        "    state.turn, state.calls.in_turn = 1, True\n"  # a tuple: two fields
        "    gates.reissue = set()\n"
        "    state.gates.approvals.answered.pop('c')\n"  # a call: not an assignment
    )
    figures = measure(package)
    assert figures.takers["RunState"] == 1 and figures.takers["GateState"] == 1
    assert figures.assignments["RunState"] == 1  # turn
    assert figures.assignments["Waits"] == 1  # gates.approvals.answered[...]
    assert figures.assignments["RunCalls"] == 2  # uses, in_turn
    assert figures.assignments["GateState"] == 1  # reissue
