"""Workflow code and what it imports hold no mutable module state.

Workers pass durable-tools' own modules through the workflow sandbox (imported once,
`durable_tools.worker._sandbox`), so a module global is shared by every run and every
thread of a worker for its whole life. State there made runs wrong: the BM25 stemmer
(`tools._bm25._STEMMER`) is not thread-safe, and its `lru_cache` kept the wrong stems
concurrent runs produced, which a replay on a fresh worker then contradicted.

This test imports exactly the modules `import durable_tools.workflows` imports (in a fresh
interpreter, so other tests' imports do not count) and flags, in each, every global the
module itself binds (imports are checked where they are defined) that can change: dicts,
lists, sets, weak dictionaries, locks, instances of non-frozen classes, objects holding
any of these, `functools.lru_cache`/`cache` functions, and mutable class attributes.
What is left is listed below, each with why it is there: `SAFE` holds what cannot make
two runs compute differently; `TO_FIX` what should not be there but belongs to modules
this test does not own (see each reason), so that nothing new can join them.
"""

from __future__ import annotations

import ast
import dataclasses
import datetime
import enum
import functools
import importlib
import json
import logging
import re
import subprocess
import sys
import threading
import types
import typing
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter
from snowballstemmer.english_stemmer import EnglishStemmer

from durable_tools import Identity, ToolSpec

SAFE: dict[str, str] = {
    "durable_tools._http_clients._clients": (
        "activities' HTTP clients, per event loop (weak keys): connections, never results; "
        "workflow code never reads it"
    ),
    "durable_tools._wire._defaults": (
        "functools.cache of a pure function of a model class (its fields' defaults), which "
        "the class fixes; the values are only compared, never handed out"
    ),
    "durable_tools.models._base._factories": (
        "the registry of model adapters `register_model` fills at start-up under `_lock`; "
        "read by the model activity, never by workflow code"
    ),
    "durable_tools.models._base._lock": "guards `_factories`",
    "durable_tools.models._scripted._cache": (
        "parsed script files of the scripted test model, keyed by path and checked against "
        "the file's size and mtime on every read, under `_cache_lock`; activity side only"
    ),
    "durable_tools.models._scripted._cache_lock": "guards `_cache`",
    "durable_tools.tools._scrub._matcher": (
        "bounded lru_cache of a pure function (the matcher of a set of secret values); used "
        "on the worker's activity side to scrub outputs, never by workflow code; it holds "
        "secret values the worker holds anyway"
    ),
    "durable_tools.tools._scrub_forms._compiled": (
        "bounded lru_cache of a pure function (a compiled pattern per secret): the same "
        "answer whatever it holds; activity side only"
    ),
    "durable_tools.models._sdk._clients": (
        "model SDK clients, per event loop (weak keys): connections, never results; "
        "activity side only"
    ),
}
"""Globals that are state, yet cannot make two runs compute differently."""

TO_FIX: dict[str, str] = {
    "durable_tools.tools._flow_json.MISSING": (
        "a dict sentinel that `field_schema` returns: a caller that mutates its answer "
        "changes it for every run (a MappingProxyType, or a private copy per call)"
    ),
    "durable_tools.models._base._BUILTIN": "constant dict: should be a MappingProxyType",
    "durable_tools.models._base._FORMS": "constant dict: should be a MappingProxyType",
    "durable_tools.models._settings._ANTHROPIC_CHOICE": "constant dict: a MappingProxyType",
    "durable_tools.tools._validation._cache": (
        "compiled validators shared by every run and thread (under `_cache_lock`), unbounded"
    ),
    "durable_tools.tools._validation._cache_lock": "guards `_cache`",
    "durable_tools.workflows.loop._embed._started": (
        "children counted per host workflow instance (weak keys), written by the workflow "
        "threads of every run at once: the count belongs on the host run, not the module"
    ),
}
"""Globals that should not be state, in modules this test does not own: each says what to do."""

_IMMUTABLE_TYPES = (
    type(None),
    bool,
    int,
    float,
    complex,
    str,
    bytes,
    range,
    type(Ellipsis),
    re.Pattern,
    datetime.date,
    datetime.time,
    datetime.timedelta,
    datetime.tzinfo,
    enum.Enum,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.ModuleType,
    type,
    typing.TypeVar,
    types.GenericAlias,
    types.UnionType,
)
_SHARED_BY_DESIGN = (
    logging.Logger,  # thread-safe, and writes only: what it logs is not read back
    TypeAdapter,  # built once at import; validating and dumping keep no per-call state
)


def mutable(value: Any, depth: int = 0) -> str | None:
    """Why `value` can change (a short description), or None when it cannot."""
    if depth > 20:
        return "nested too deep to prove immutable"
    if isinstance(value, _IMMUTABLE_TYPES + _SHARED_BY_DESIGN) or type(value) is object:
        return None
    if type(value).__module__ in ("typing", "typing_extensions", "collections.abc"):
        return None  # typing constructs (Literal[...], Callable[...], Final, ...)
    if isinstance(value, (tuple, frozenset)):
        return next(filter(None, (mutable(v, depth + 1) for v in value)), None)
    if isinstance(value, types.MappingProxyType):
        return next(filter(None, (mutable(v, depth + 1) for v in value.values())), None)
    if hasattr(value, "cache_info") or hasattr(value, "cache_clear"):
        return "a cache shared by every run (functools.lru_cache or cache)"
    if isinstance(value, BaseModel):
        if not value.model_config.get("frozen"):
            return f"an instance of {type(value).__qualname__}, a model that is not frozen"
        fields = [getattr(value, name) for name in type(value).model_fields]
        return next(filter(None, (mutable(v, depth + 1) for v in fields)), None)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if not type(value).__dataclass_params__.frozen:  # type: ignore[attr-defined]
            return f"an instance of {type(value).__qualname__}, a dataclass that is not frozen"
        fields = [getattr(value, f.name) for f in dataclasses.fields(value)]
        return next(filter(None, (mutable(v, depth + 1) for v in fields)), None)
    return f"a {type(value).__module__}.{type(value).__qualname__}, which can change"


def _bound_names(tree: ast.Module) -> tuple[set[str], set[str], set[str]]:
    """Names a module's own top-level code binds: (assigned, functions, classes)."""
    assigned: set[str] = set()
    functions: set[str] = set()
    classes: set[str] = set()
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                assigned |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions.add(node.name)
        elif isinstance(node, ast.ClassDef):
            classes.add(node.name)
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            pending += node.body + getattr(node, "orelse", []) + getattr(node, "finalbody", [])
            for handler in getattr(node, "handlers", []):
                pending += handler.body
    return assigned, functions, classes


# Pydantic and the ABC machinery keep their own bookkeeping on every class.
_CLASS_INTERNALS = frozenset(
    {"model_config", "model_fields", "model_computed_fields", "_abc_impl", "__slots__"}
)


def module_state(name: str) -> dict[str, str]:
    """Every mutable global `name` binds itself, as `module.global` -> why it can change."""
    module = importlib.import_module(name)
    assert module.__file__ is not None
    assigned, functions, classes = _bound_names(ast.parse(Path(module.__file__).read_text()))
    found: dict[str, str] = {}
    for global_name in sorted(assigned | functions):
        if global_name == "__all__" or not hasattr(module, global_name):
            continue
        why = mutable(getattr(module, global_name))
        if why is not None:
            found[f"{name}.{global_name}"] = why
    for class_name in sorted(classes):
        cls = getattr(module, class_name, None)
        if not isinstance(cls, type):
            continue
        for attribute, value in vars(cls).items():
            if attribute.startswith("__") or attribute in _CLASS_INTERNALS:
                continue
            if issubclass(cls, enum.Enum) and attribute.startswith("_") and attribute.endswith("_"):
                continue  # the enum machinery's own tables of members, fixed at definition
            if isinstance(value, (dict, list, set, bytearray)) or hasattr(value, "cache_info"):
                found[f"{name}.{class_name}.{attribute}"] = f"a class attribute: {mutable(value)}"
    return found


@pytest.fixture(scope="module")
def workflow_modules() -> list[str]:
    """The durable-tools modules `import durable_tools.workflows` imports, exactly."""
    listing = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json, sys, durable_tools.workflows; print(json.dumps(sorted("
            "m for m in sys.modules if m.split('.')[0] == 'durable_tools')))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    modules: list[str] = json.loads(listing.stdout)
    assert "durable_tools.tools._bm25" in modules and len(modules) > 50
    return modules


def test_workflow_code_holds_no_mutable_module_state(workflow_modules: list[str]):
    found: dict[str, str] = {}
    for name in workflow_modules:
        found |= module_state(name)
    unexplained = {key: why for key, why in found.items() if key not in SAFE | TO_FIX}
    assert not unexplained, (
        "module-level state in code every workflow run shares: make it immutable "
        "(frozenset, MappingProxyType, a frozen model) or per call; or, only if it can never "
        f"make two runs compute differently, add it to SAFE with why: {unexplained}"
    )


def test_the_check_catches_each_kind_of_state():
    from durable_tools.tools._bm25 import Stems  # here: the main test must run on any _bm25

    assert mutable({"a": 1}) == "a builtins.dict, which can change"
    assert mutable((1, [2])) == "a builtins.list, which can change"
    assert mutable(frozenset({1, 2})) is None
    assert mutable(types.MappingProxyType({"a": (1, 2)})) is None
    assert mutable(types.MappingProxyType({"a": [1]})) == "a builtins.list, which can change"
    assert mutable(threading.Lock()) is not None
    assert "EnglishStemmer" in (mutable(EnglishStemmer()) or "")
    assert mutable(Stems()) is not None  # so it can only live per call, never in a global
    assert "cache" in (mutable(functools.lru_cache(maxsize=None)(len)) or "")
    assert mutable(re.compile("x")) is None
    assert mutable(Identity(user="u")) is None  # a frozen model of strings
    assert mutable(ToolSpec(name="x")) == "a builtins.dict, which can change"  # its schema
    assert mutable(object()) is None
