"""The oauth package's modules import each other without a cycle (TYPE_CHECKING imports
included: a cycle there is one refactor away from an ImportError)."""

from __future__ import annotations

import ast
from pathlib import Path

import durable_tools.oauth

PACKAGE = Path(durable_tools.oauth.__file__).parent


def imports_of(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.level == 1:
                found.add(node.module)
            elif node.module.startswith("durable_tools.oauth."):
                found.add(node.module.rsplit(".", 1)[1])
    return found


def test_no_import_cycle_between_oauth_modules() -> None:
    graph = {
        path.stem: imports_of(path) for path in PACKAGE.glob("_*.py") if path.stem != "__init__"
    }
    cycles = []

    def visit(module: str, path: list[str]) -> None:
        for imported in sorted(graph.get(module, ())):
            if imported in path:
                cycles.append([*path[path.index(imported) :], imported])
            else:
                visit(imported, [*path, imported])

    for module in graph:
        visit(module, [module])
    assert cycles == []
    assert graph["_records"] == set()  # the shared records depend on nothing of the package
