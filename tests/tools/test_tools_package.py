"""The package exports what it means to, and stays free of Temporal."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import durable_tools.tools as tools


def _isort_key(name: str) -> tuple[int, str]:
    # Ruff's RUF022 order: CONSTANTS, then CamelCase classes, then functions.
    if name.isupper():
        return (0, name)
    return (1 if name[0].isupper() else 2, name)


def test_all_is_sorted_and_every_name_exists() -> None:
    assert tools.__all__ == sorted(tools.__all__, key=_isort_key)
    assert len(set(tools.__all__)) == len(tools.__all__)
    for name in tools.__all__:
        assert hasattr(tools, name), name


def test_private_modules_declare_all() -> None:
    names = [m.name for m in pkgutil.iter_modules(tools.__path__) if m.name.startswith("_")]
    assert "_schema_strict" in names  # the listing finds the modules
    for name in names:
        module = importlib.import_module(f"{tools.__name__}.{name}")
        assert module.__all__, module.__name__
        for exported in module.__all__:
            assert hasattr(module, exported), f"{module.__name__}.{exported}"


def test_the_tool_layer_does_not_import_temporalio() -> None:
    code = (
        "import sys, durable_tools.tools as t; "
        "t.ToolRegistry().register(lambda x=1: x, name='f'); "
        "print(sorted(m for m in sys.modules if m.startswith('temporalio')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"
