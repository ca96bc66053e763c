"""The package exports what it means to export, sorted, and the top level stays Temporal-free."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import durable_tools

PACKAGES = [
    "durable_tools",
    "durable_tools.tools",
    "durable_tools.models",
    "durable_tools.workflows",
    "durable_tools._activities",
    "durable_tools.worker",
    "durable_tools.plugin",
    "durable_tools.oauth",
    "durable_tools.sources",
    "durable_tools.workspace",
    "durable_tools.callbacks",
    "durable_tools.flows",
    "durable_tools.streaming",
]


@pytest.mark.parametrize("name", PACKAGES)
def test_all_is_sorted_and_every_name_resolves(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert exported == sorted(exported, key=lambda n: (not n.isupper(), n)) or exported == sorted(
        exported
    ), f"{name}.__all__ is not sorted"
    assert len(exported) == len(set(exported))
    for attribute in exported:
        assert hasattr(module, attribute), f"{name}.{attribute} is exported but missing"


def test_top_level_api() -> None:
    assert {"ToolRegistry", "ToolContext", "Injected", "ToolResult", "ToolSpec"} <= set(
        durable_tools.__all__
    )
    assert durable_tools.__version__


def test_top_level_import_does_not_load_temporal() -> None:
    code = "import sys, durable_tools; print(any(m.startswith('temporalio') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
