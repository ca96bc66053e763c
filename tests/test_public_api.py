"""The package exports what it means to export, once, and the top level stays Temporal-free.

A public module is a module or package of `durable_tools` with no leading underscore in any
part of its dotted path; its `__all__` is its public API. A package whose `__all__` is empty
only groups private modules by role (`durable_tools.protocol`, `durable_tools.workflows.calls`,
...) and is not a public module. Every public object has exactly one
public path: the module whose `__all__` lists it.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings
from collections import defaultdict
from pathlib import Path

import pytest

import durable_tools

SOURCE = Path(durable_tools.__file__).parent


def _public_modules() -> list[str]:
    found = []
    for path in sorted(SOURCE.rglob("*.py")):
        parts = path.relative_to(SOURCE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts[-1] == "__main__" or any(part.startswith("_") for part in parts):
            continue
        if path.name == "__init__.py" and "__all__: list[str] = []" in path.read_text():
            continue
        found.append(".".join(parts))
    return found


PUBLIC_MODULES = _public_modules()

EXPECTED_MODULES = [
    "durable_tools",
    "durable_tools.callbacks",
    "durable_tools.cli",
    "durable_tools.client",
    "durable_tools.codec",
    "durable_tools.codec.server",
    "durable_tools.connection",
    "durable_tools.demo",
    "durable_tools.demo.tools",
    "durable_tools.events",
    "durable_tools.flows",
    "durable_tools.inbox",
    "durable_tools.integrations.openai_agents",
    "durable_tools.integrations.pydantic_ai",
    "durable_tools.messages",
    "durable_tools.models",
    "durable_tools.oauth",
    "durable_tools.plugin",
    "durable_tools.search_attributes",
    "durable_tools.server",
    "durable_tools.sources",
    "durable_tools.streaming",
    "durable_tools.telemetry",
    "durable_tools.tools",
    "durable_tools.worker",
    "durable_tools.workflows",
    "durable_tools.workspace",
]

SAME_NAME_DIFFERENT_THINGS = {
    # Two different classes that happen to share a name; each has one public path.
    "PendingAuthorization": {
        "durable_tools.oauth",  # the broker's stored record (a state store keeps it)
        "durable_tools.workflows",  # a run's status entry (`status().pending_authorizations`)
    },
    "TokenStore": {
        "durable_tools.inbox",  # the inbox's users' bearer tokens file
        "durable_tools.oauth",  # where the OAuth broker keeps users' provider tokens
    },
}


def _exported(module_name: str) -> list[str]:
    return list(importlib.import_module(module_name).__all__)


def test_the_public_modules_are_the_intended_ones() -> None:
    # A new public module is a decision: add it here (or give it a leading underscore).
    assert PUBLIC_MODULES == EXPECTED_MODULES


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_all_is_sorted_and_every_name_resolves(name: str) -> None:
    module = importlib.import_module(name)
    exported = _exported(name)
    assert exported == sorted(exported, key=lambda n: (not n.isupper(), n)) or exported == sorted(
        exported
    ), f"{name}.__all__ is not sorted"
    assert len(exported) == len(set(exported))
    for attribute in exported:
        assert hasattr(module, attribute), f"{name}.{attribute} is exported but missing"
        assert not attribute.startswith("_") or attribute == "__version__", (
            f"{name} exports the private name {attribute}"
        )


def test_every_public_name_has_one_public_path() -> None:
    homes: dict[str, set[str]] = defaultdict(set)
    objects: dict[int, set[str]] = defaultdict(set)
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for attribute in _exported(module_name):
            homes[attribute].add(module_name)
            value = getattr(module, attribute)
            if not isinstance(value, (str, int, float, bool, tuple, frozenset)):
                objects[id(value)].add(f"{module_name}.{attribute}")
    twice = {n: m for n, m in homes.items() if len(m) > 1}
    assert twice == SAME_NAME_DIFFERENT_THINGS
    assert [sorted(paths) for paths in objects.values() if len(paths) > 1] == []


def test_top_level_exports_only_the_version() -> None:
    assert durable_tools.__all__ == ["__version__"]
    assert durable_tools.__version__


def test_old_top_level_imports_still_work_and_name_the_one_path() -> None:
    # The README once showed `from durable_tools import ToolRegistry` and `DurableToolsPlugin`.
    from durable_tools.plugin import DurableToolsPlugin
    from durable_tools.tools import ToolRegistry

    with pytest.warns(DeprecationWarning, match="import it from durable_tools.tools"):
        assert durable_tools.ToolRegistry is ToolRegistry  # type: ignore[attr-defined]
    with pytest.warns(DeprecationWarning, match="import it from durable_tools.plugin"):
        assert durable_tools.DurableToolsPlugin is DurableToolsPlugin  # type: ignore[attr-defined]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AttributeError, match="no attribute 'format_result'"):
            durable_tools.format_result  # type: ignore[attr-defined]  # noqa: B018


def test_the_input_answer_api_is_public() -> None:
    from durable_tools.client import InputAnswerRejected, answer_input
    from durable_tools.workflows import PendingInput

    assert callable(answer_input)
    assert issubclass(InputAnswerRejected, ValueError)
    assert "call_id" in PendingInput.model_fields


def test_top_level_import_does_not_load_temporal() -> None:
    code = "import sys, durable_tools; print(any(m.startswith('temporalio') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
