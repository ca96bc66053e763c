"""Every event name the run can emit is documented, and every documented name is emitted."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from durable_tools.events import MISSED_EVENT
from durable_tools.protocol._event_names import EVENT_NAMES, RUN_ENDED
from durable_tools.workflows.run._wait_maps import APPROVAL, AUTHORIZATION, CALLBACK, INPUT

ROOT = Path(__file__).resolve().parents[2]


def documented() -> set[str]:
    text = (ROOT / "docs" / "events.md").read_text()
    table = text.split("### Event names", 1)[1].split("\n\n", 2)[1]
    return set(re.findall(r"`([a-z]+\.[a-z_]+)`", table))


def emitted_literally() -> set[str]:
    """The names passed as string literals to `.event(...)` anywhere in the package."""
    names: set[str] = set()
    for path in (ROOT / "src" / "durable_tools").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "event"
                and node.args
            ):
                for part in ast.walk(node.args[0]):
                    if isinstance(part, ast.Constant) and isinstance(part.value, str):
                        names.add(part.value)
    return names


def test_the_docs_list_exactly_the_names_a_run_can_emit() -> None:
    docs = documented()
    assert sorted(EVENT_NAMES - docs) == [], "emitted but not in docs/events.md"
    assert sorted(docs - EVENT_NAMES) == [], "in docs/events.md but never emitted"


def test_every_name_the_code_passes_is_a_known_event() -> None:
    # mypy refuses any other name (RunState.event takes an EventName); this says which.
    assert sorted(emitted_literally() - EVENT_NAMES) == []


def waits_emitted() -> set[str]:
    """The names the durable wait (`_wait`) emits for each kind of wait."""
    return {
        name
        for kind in (APPROVAL, AUTHORIZATION, CALLBACK, INPUT)
        for name in (kind.requested, kind.expired)
    }


def test_every_name_a_wait_emits_is_a_known_event() -> None:
    assert sorted(waits_emitted() - EVENT_NAMES) == []


def test_every_known_event_is_emitted_somewhere() -> None:
    emitted = emitted_literally() | waits_emitted() | set(RUN_ENDED.values()) | {MISSED_EVENT}
    assert sorted(EVENT_NAMES - emitted) == []
