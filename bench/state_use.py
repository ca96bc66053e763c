"""`python -m bench.state_use`: how far the run's state reaches into the workflow code.

Reads the source of `durable_tools` with `ast` (nothing is imported or run) and counts,
for `RunState` and each role part it holds (the types in `PARTS`):

- the functions that take it: a parameter annotated with the type;
- the direct assignments to its fields from outside the code that owns it:
  `x.field = ...`, `x.field[...] = ...`, `x.field += ...`, where `x` is a parameter or an
  attribute (`self.state`) annotated with the type, or a field of such a value whose
  annotation is a tracked type (`state.gates.approvals.answered[...] = ...` is an
  assignment to the gates part).

The figures are the ones issue #29's closing note quotes; run it before and after a
change of the state's layout.
"""

from __future__ import annotations

import argparse
import ast
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

SOURCE = Path(__file__).resolve().parent.parent / "src/durable_tools"

PARTS: dict[str, str] = {
    "RunState": "workflows/run/_state.py",
    "GateState": "workflows/gates/",
    "Waits": "workflows/gates/",
    "RunCalls": "workflows/calls/",
    "ModelUse": "workflows/loop/",
    "CatalogState": "workflows/catalog/",
}
"""Each tracked type and the code that owns it (a file, or a package ending in "/"):
assignments there are the owner's own."""


def _type_name(annotation: ast.expr | None) -> str | None:
    """The tracked type an annotation names (`RunState`, `"RunState"`, `RunState | None`)."""
    if annotation is None:
        return None
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return None
    for node in ast.walk(annotation):
        name = (
            node.id
            if isinstance(node, ast.Name)
            else node.attr
            if isinstance(node, ast.Attribute)
            else None
        )
        if name in PARTS:
            return name
    return None


@dataclass
class Figures:
    takers: Counter[str] = field(default_factory=Counter)
    """Functions taking each type."""
    taker_files: dict[str, set[str]] = field(default_factory=dict)
    assignments: Counter[str] = field(default_factory=Counter)
    """Assignments to each type's fields from outside its owner."""
    assignment_files: dict[str, set[str]] = field(default_factory=dict)
    places: list[str] = field(default_factory=list)


def _fields(tree: ast.Module) -> dict[str, dict[str, str]]:
    """For each tracked class, its fields whose annotation is a tracked type."""
    fields: dict[str, dict[str, str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name in PARTS:
            own = fields.setdefault(node.name, {})
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    kind = _type_name(item.annotation)
                    if kind is not None:
                        own[item.target.id] = kind
    return fields


def _owned(kind: str, module: str) -> bool:
    owner = PARTS[kind]
    return module.startswith(owner) if owner.endswith("/") else module == owner


def _chain(target: ast.expr) -> tuple[ast.expr, list[str]] | None:
    """`a.b.c[...]` -> (a, ["b", "c"]); None when nothing is assigned through an attribute."""
    attrs: list[str] = []
    node: ast.expr = target
    while isinstance(node, ast.Attribute | ast.Subscript):
        if isinstance(node, ast.Attribute):
            attrs.append(node.attr)
        node = node.value
    return (node, attrs[::-1]) if attrs else None


def _parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, str]:
    """The parameters of `function` annotated with a tracked type, and the type."""
    arguments = function.args
    names: dict[str, str] = {}
    for argument in [
        *arguments.posonlyargs,
        *arguments.args,
        *arguments.kwonlyargs,
        *([arguments.vararg] if arguments.vararg else []),
        *([arguments.kwarg] if arguments.kwarg else []),
    ]:
        kind = _type_name(argument.annotation)
        if kind is not None:
            names[argument.arg] = kind
    return names


def _value_type(
    value: ast.expr, names: dict[str, str], returns: dict[str, str], attributes: dict[str, str]
) -> str | None:
    """The tracked type of `value`: a tracked name, `self.<tracked attribute>`, or a call
    of a function returning a tracked type."""
    if isinstance(value, ast.Name):
        return names.get(value.id)
    if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name):
        return attributes.get(value.attr) if value.value.id == "self" else None
    if isinstance(value, ast.Call):
        function = value.func
        name = function.id if isinstance(function, ast.Name) else None
        return returns.get(name) if name else None
    return None


def _flat(targets: list[ast.expr]) -> list[ast.expr]:
    """Assignment targets with tuples unpacked (`a.x, a.y = ...` assigns two fields)."""
    flat: list[ast.expr] = []
    for target in targets:
        if isinstance(target, ast.Tuple | ast.List):
            flat.extend(_flat(list(target.elts)))
        else:
            flat.append(target)
    return flat


def measure(source: Path = SOURCE) -> Figures:
    figures = Figures()
    trees = {
        path.relative_to(source).as_posix(): ast.parse(path.read_text(), str(path))
        for path in sorted(source.rglob("*.py"))
    }
    fields: dict[str, dict[str, str]] = {}
    for tree in trees.values():
        fields.update(_fields(tree))
    # Functions returning a tracked type (`start_state`).
    returns: dict[str, str] = {}
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                kind = _type_name(node.returns)
                if kind is not None:
                    returns[node.name] = kind
    # Attributes holding a tracked type anywhere: annotated (`_state: RunState`,
    # `self.state: RunState`), or set from a parameter of the type or a call returning it.
    attributes: dict[str, str] = {}
    # The parts' own fields are reached through their holder (`state.calls`), not by name:
    # another class's attribute of the same name (`self.calls`) is no part.
    part_fields = {
        id(item)
        for tree in trees.values()
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and node.name in PARTS
        for item in node.body
    }
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.AnnAssign) and id(node) not in part_fields:
                kind = _type_name(node.annotation)
                target = node.target
                if kind is not None and isinstance(target, ast.Attribute | ast.Name):
                    attributes[target.attr if isinstance(target, ast.Attribute) else target.id] = (
                        kind
                    )
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                parameters = _parameters(node)
                for statement in ast.walk(node):
                    if isinstance(statement, ast.Assign) and isinstance(
                        statement.targets[0], ast.Attribute
                    ):
                        kind = _value_type(statement.value, parameters, returns, {})
                        if kind is not None:
                            attributes[statement.targets[0].attr] = kind
    for module, tree in trees.items():
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            names = _parameters(function)
            for kind in set(names.values()):
                figures.takers[kind] += 1
                figures.taker_files.setdefault(kind, set()).add(module)
            # Local names bound to a tracked value (`state = self._state`).
            for node in ast.walk(function):
                if (
                    isinstance(node, ast.Assign)
                    and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Name)
                ):
                    kind = _value_type(node.value, names, returns, attributes)
                    if kind is not None:
                        names.setdefault(node.targets[0].id, kind)
            for node in ast.walk(function):
                targets: list[ast.expr]
                if isinstance(node, ast.Assign):
                    targets = node.targets
                elif isinstance(node, ast.AugAssign | ast.AnnAssign):
                    targets = [node.target]
                else:
                    continue
                for assigned in _flat(targets):
                    chain = _chain(assigned)
                    if chain is None:
                        continue
                    root, attrs = chain
                    if isinstance(root, ast.Name) and root.id in names:
                        owner: str | None = names[root.id]
                    elif (
                        isinstance(root, ast.Name)
                        and root.id == "self"
                        and attrs[0] in attributes
                        and len(attrs) > 1
                    ):
                        owner, attrs = attributes[attrs[0]], attrs[1:]
                    else:
                        continue
                    # Descend through fields that are themselves tracked parts.
                    while (
                        owner is not None and len(attrs) > 1 and attrs[0] in fields.get(owner, {})
                    ):
                        owner, attrs = fields[owner][attrs[0]], attrs[1:]
                    if owner is None or _owned(owner, module):
                        continue
                    figures.assignments[owner] += 1
                    figures.assignment_files.setdefault(owner, set()).add(module)
                    figures.places.append(f"{module}:{node.lineno} {owner}.{attrs[0]}")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.state_use", description=__doc__)
    parser.add_argument("--places", action="store_true", help="list every assignment counted")
    args = parser.parse_args()
    figures = measure()
    for kind in PARTS:
        takers = figures.takers[kind]
        assigned = figures.assignments[kind]
        if not takers and not assigned and kind != "RunState":
            continue
        print(
            f"{kind}: taken by {takers} functions in "
            f"{len(figures.taker_files.get(kind, ()))} files; "
            f"{assigned} field assignments outside {PARTS[kind]} in "
            f"{len(figures.assignment_files.get(kind, ()))} files"
        )
    if args.places:
        for place in figures.places:
            print(f"  {place}")


if __name__ == "__main__":
    main()
