"""No import cycles inside the package: every module can be read (and loaded) on its own.

Counts every import of a `durable_tools` module anywhere in a file, including those under
`TYPE_CHECKING` and inside functions (a function-level import is a cycle deferred, not
removed). Package `__init__` modules only re-export, so edges into them are left out.

Between packages too: each subpackage (`durable_tools.tools`, ...) is one node, each
top-level module (`durable_tools.client`, ...) another; a module's import of any module of
another node (its `__init__` included) is an edge. The cycles left are listed, each with
why it stands; a new one fails the test, and so does breaking a listed one (update the list).
"""

from __future__ import annotations

import ast
from pathlib import Path

import durable_tools

ROOT = Path(durable_tools.__file__).parent.parent


def _modules() -> dict[str, Path]:
    found = {}
    for path in (ROOT / "durable_tools").rglob("*.py"):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                full = f"{module}.{alias.name}"
                targets.add(full if full in modules else module)
        elif isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
    return {t for t in targets if t in modules and t != name}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            child = next(edges, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_package_has_no_import_cycles() -> None:
    modules = _modules()
    packages = {n for n, p in modules.items() if p.name == "__init__.py"}
    graph = {
        name: _imports(name, path, modules) - packages
        for name, path in modules.items()
        if name not in packages
    }
    assert _cycles(graph) == []


def _node(name: str) -> str:
    """The innermost package holding the module (`durable_tools.workflows.calls`), or the
    module itself when it sits at the top level (`durable_tools.client`)."""
    parts = name.split(".")
    for depth in range(len(parts), 1, -1):
        if (ROOT.joinpath(*parts[:depth])).is_dir():
            return ".".join(parts[:depth])
    return name


def _package_graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {_node(name): set() for name in modules}
    for name, path in modules.items():
        graph[_node(name)] |= {_node(target) for target in _imports(name, path, modules)}
    for node, targets in graph.items():
        targets.discard(node)
    return graph


def test_the_packages_have_no_import_cycles() -> None:
    # The last two were broken by moving the shared parts down: the wire types, limits and
    # policy rules to `protocol` (under both the workflow and its activities), and who is
    # calling a web surface to `_callers` (under both the inbox and the codec server).
    assert _cycles(_package_graph()) == []


WORKFLOW_LAYERS = ["loop", "script", "calls", "gates", "catalog", "observe", "run"]
"""`durable_tools.workflows`' role packages, top first: the loop runs a turn's calls, a
script (code mode) makes calls, a call passes gates, the gates read the catalog and tell
operators; `run` (the run's state, its wait maps, the validated call, the replies to the
model) is under all of them. `flow` (the flow workflow) uses the calls' activity helpers;
`limiter` (the model limiter workflow) imports no other role package."""


def test_the_workflow_packages_import_only_downwards() -> None:
    graph = _package_graph()
    rank = {f"durable_tools.workflows.{name}": i for i, name in enumerate(WORKFLOW_LAYERS)}
    rank["durable_tools.workflows.flow"] = -1
    rank["durable_tools.workflows.limiter"] = -1
    upward = {
        (package, target)
        for package, targets in graph.items()
        if package in rank
        for target in targets
        if target in rank
        and rank[target] <= rank[package]
        and {package, target}
        != {"durable_tools.workflows.catalog", "durable_tools.workflows.observe"}
    }
    assert upward == set()
    assert set(rank) == {n for n in graph if n.startswith("durable_tools.workflows.")}


CLIENT_LAYERS = ["", "runs", "start", "sessions", "callbacks", "inputs", "render"]
"""`durable_tools.client`'s role packages, top first: the package itself (the public names
and `DurableTools`) hands out `runs`' `AgentRun`, which calls on a session's messages,
callback tools and the decide operation's rendering; `start` (what a start sends),
`inputs` (answering a tool's question) and `render` (the CLI's plain text) are below."""

SURFACES = {"durable_tools.cli", "durable_tools.inbox", "durable_tools.demo"}
"""What people use the client through: the client imports none of them."""


def test_the_client_packages_import_only_downwards() -> None:
    graph = _package_graph()
    rank = {f"durable_tools.client.{name}".rstrip("."): i for i, name in enumerate(CLIENT_LAYERS)}
    upward = {
        (package, target)
        for package, targets in graph.items()
        if package in rank
        for target in targets
        if target in rank and rank[target] <= rank[package]
    }
    assert upward == set()
    assert set(rank) == {n for n in graph if n.startswith("durable_tools.client")}
    assert {(p, t) for p in rank for t in graph[p] & SURFACES} == set()


def test_the_tool_layer_imports_no_durable_layer() -> None:
    # `tools` is plain Python (no Temporal): it must not import what runs on Temporal.
    allowed = {"durable_tools._durations", "durable_tools._extras", "durable_tools._wire"}
    assert _package_graph()["durable_tools.tools"] <= allowed


def test_the_demo_does_not_import_the_cli() -> None:
    assert "durable_tools.cli" not in _package_graph()["durable_tools.demo"]


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_integrations_stand_on_the_public_api() -> None:
    # An integration with another agent framework is what a user could write: it builds on
    # the public tool runtime (and the install hint), and nothing of durable-tools needs it.
    graph = _package_graph()
    assert graph["durable_tools.integrations"] <= {
        "durable_tools.workflows",
        "durable_tools._extras",
    }
    assert [
        node for node, targets in graph.items() if "durable_tools.integrations" in targets
    ] == []
