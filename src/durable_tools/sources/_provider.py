"""One provider interface for every tool source, and one way to apply what it discovers.

A `ToolProvider` connects to a source (an MCP server, an OpenAPI document, an HTTP
endpoint, an A2A agent's card), discovers its tools and closes. What it discovers is a
list of `Discovered` tools; `apply_discovery` brings a registry in line with it: it
registers the new tools, replaces the changed ones (`register(..., replace=True)`, which
emits `tool.replaced`) and withdraws the ones the source dropped (`tool.withdrawn`). A
name that another source (or a Python tool) holds is refused, never taken over, and a
tool whose schema is over `MAX_SOURCE_SCHEMA_BYTES` is refused: a source cannot grow a
catalog past Temporal's payload limit or rename its tool onto someone else's.

Which source owns which name is kept per registry (`_OWNERS`), so that every discovery
of one source, whichever object runs it, agrees on what that source registered before.
"""

from __future__ import annotations

import hashlib
import json
import logging
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from durable_tools.tools import RegisteredTool, ToolRegistrationError, ToolRegistry
from durable_tools.tools._schema_tools import SchemaHandler

__all__ = [
    "MAX_SOURCE_SCHEMA_BYTES",
    "CatalogChange",
    "Discovered",
    "RecordingRegistry",
    "ToolProvider",
    "apply_discovery",
    "check_schema_size",
    "fingerprint",
    "owner_of",
    "recorded_discovery",
]

logger = logging.getLogger("durable_tools.sources")

MAX_SOURCE_SCHEMA_BYTES = 256_000
"""Largest input schema (as JSON) a source's tool may have. A source's schema reaches
every run's catalog and every model call's tool definitions: one that grew to megabytes
would fail every new run's start (its catalog over Temporal's payload limit). A real
tool's schema is a few kilobytes."""

_OWNERS: weakref.WeakKeyDictionary[ToolRegistry, dict[str, tuple[str, str, RegisteredTool]]] = (
    weakref.WeakKeyDictionary()
)
"""Per registry: tool name -> (owner key of the source that registered it, fingerprint,
the tool it registered). A name someone re-registered since is no longer the source's."""


@dataclass(frozen=True)
class Discovered:
    """One tool a source offers, ready to be registered (or to replace its older self).

    Attributes:
        name: The tool's name in the registry.
        fingerprint: A digest of everything the source said about the tool: a new one
            means the tool changed and replaces the registered one.
        register: Registers it: `register(replace)` returns the registered tool.
        input_schema: Its input schema (checked against `MAX_SOURCE_SCHEMA_BYTES`).
        origin: What the source calls it, for messages.
    """

    name: str
    fingerprint: str
    register: Callable[[bool], RegisteredTool]
    input_schema: Mapping[str, Any]
    origin: str


@dataclass
class CatalogChange:
    """What one discovery changed in a registry, by tool name."""

    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)
    """Names the source offers that were not registered, with why."""
    registered: list[RegisteredTool] = field(default_factory=list)
    """The tools registered or replaced, in the source's order."""

    def __bool__(self) -> bool:
        return bool(self.added or self.changed or self.removed)


@runtime_checkable
class ToolProvider(Protocol):
    """A tool source: MCP server, OpenAPI document, HTTP endpoint or A2A agent.

    `owner` names the source (stable across reads: which registered names are its own);
    `label` is how messages name it (never a URL with credentials).
    """

    owner: str
    label: str

    async def connect(self) -> None:
        """Open what discovery and calls need (a session); a no-op for a stateless source."""

    async def discover(self, registry: ToolRegistry) -> list[Discovered]:
        """Read the source's tools as they are now (naming them as `registry` requires).

        Raises:
            Exception: the source cannot be read; the tools registered stay as they are.
        """

    async def close(self) -> None:
        """Release what `connect` opened."""


def fingerprint(*parts: Any, ordered: bool = False) -> str:
    """A stable digest of JSON-able parts (what a source said about one tool).

    A mapping whose keys are not all text (YAML reads `200:` as an int beside
    `default:`) has a digest too: `json.dumps` cannot sort such keys, so it is digested
    as its list of key-value pairs.

    Args:
        parts: What to digest.
        ordered: Whether the order of mappings' keys counts; by default it does not.
    """
    try:
        text = _canonical(parts, ordered)
    except TypeError:  # keys json.dumps cannot sort: rare, so only then copied
        text = _canonical(_text_sortable(parts, ordered), ordered)
    return hashlib.sha256(text.encode()).hexdigest()


def _canonical(value: Any, ordered: bool) -> str:
    return json.dumps(value, sort_keys=not ordered, separators=(",", ":"), default=str)


def _text_sortable(value: Any, ordered: bool) -> Any:
    """`value` with each mapping that has a key other than text as its list of
    `[key, value]` pairs (sorted by the key's JSON unless `ordered`): no key is lost,
    `200` and `"200"` stay apart."""
    if isinstance(value, Mapping):
        if all(isinstance(k, str) for k in value):
            return {k: _text_sortable(v, ordered) for k, v in value.items()}
        pairs = [
            [k if isinstance(k, int | float | bool | None) else str(k), _text_sortable(v, ordered)]
            for k, v in value.items()
        ]
        return pairs if ordered else sorted(pairs, key=lambda pair: _canonical(pair[0], True))
    if isinstance(value, list | tuple):
        return [_text_sortable(v, ordered) for v in value]
    return value


def check_schema_size(source: str, origin: str, schema: Any) -> None:
    """Refuse an input schema over `MAX_SOURCE_SCHEMA_BYTES`.

    Raises:
        ToolRegistrationError: `rule="schema"`, naming the source, the tool and the size.
    """
    size = len(json.dumps(schema, separators=(",", ":"), default=str))
    if size > MAX_SOURCE_SCHEMA_BYTES:
        raise ToolRegistrationError(
            f"{source} offers {origin!r} with an input schema of {size:,} bytes, over the "
            f"{MAX_SOURCE_SCHEMA_BYTES:,}-byte limit (MAX_SOURCE_SCHEMA_BYTES)",
            rule="schema",
        )


def owner_of(registry: ToolRegistry, name: str) -> str | None:
    """The owner key of the source that registered `name` in `registry`, if a source did."""
    entry = _OWNERS.get(registry, {}).get(name)
    return None if entry is None else entry[0]


def apply_discovery(
    registry: ToolRegistry,
    owner: str,
    label: str,
    discovered: Sequence[Discovered],
    *,
    initial: bool,
) -> CatalogChange:
    """Bring `registry` in line with what the source `owner` offers now.

    Args:
        registry: Where the tools are.
        owner: The source's key (`ToolProvider.owner`).
        label: The source, as messages name it.
        discovered: Its tools now.
        initial: The first read (`attach_*`): every tool is registered and any error is
            raised (a duplicate name is the caller's to fix). Later reads never raise for
            one tool: a tool that cannot be registered is logged and left out, so the
            others still follow.

    Returns:
        What changed.

    Raises:
        ToolRegistrationError: on the first read only, a tool that cannot be registered.
    """
    owners = _OWNERS.setdefault(registry, {})
    change = CatalogChange()
    offered: set[str] = set()
    for tool in discovered:
        offered.add(tool.name)
        replace = False
        if not initial and tool.name in registry:
            held = owners.get(tool.name)
            if held is None or held[0] != owner or registry.get(tool.name) is not held[2]:
                # Another source's tool (or a Python tool): a source must not take over
                # a name by renaming its tool to it.
                why = "the name of a tool it does not own"
                logger.warning(
                    "%s now offers %r as %s, %s: not registered", label, tool.origin, tool.name, why
                )
                change.refused[tool.name] = why
                continue
            if held[1] == tool.fingerprint and not registry.is_withdrawn(tool.name):
                continue  # unchanged
            replace = True  # a changed schema, description or options, or back again
        try:
            check_schema_size(label, tool.origin, tool.input_schema)
            registered = tool.register(replace)
        except ToolRegistrationError as error:
            if initial:
                raise
            logger.warning("%s: tool %r not registered: %s", label, tool.origin, error)
            change.refused[tool.name] = str(error)
            continue
        owners[tool.name] = (owner, tool.fingerprint, registered)
        change.registered.append(registered)
        (change.changed if replace else change.added).append(tool.name)
    if not initial:
        for name, (held_by, _, mine) in list(owners.items()):
            if held_by != owner or name in offered or name not in registry:
                continue
            if registry.get(name) is not mine:  # re-registered by someone else since
                continue
            if registry.withdraw(
                name,
                reason=f"is no longer offered by {label}; a call from a run that still "
                "lists it gets a tool error",
            ):
                change.removed.append(name)
    return change


class RecordingRegistry(ToolRegistry):
    """A scratch registry that keeps each `register_schema` call, so that a source's own
    attach function can run unchanged and its tools be applied to the real registry later
    (`recorded_discovery`)."""

    def __init__(self, like: ToolRegistry) -> None:
        super().__init__(name_style=like.name_style, max_name_length=like.max_name_length)
        self.calls: list[tuple[RegisteredTool, SchemaHandler, dict[str, Any], dict[str, Any]]] = []

    def register_schema(  # type: ignore[override]
        self,
        handler: SchemaHandler,
        *,
        input_schema: Mapping[str, Any],
        replace: bool = False,
        **options: Any,
    ) -> RegisteredTool:
        tool = super().register_schema(
            handler, input_schema=input_schema, replace=replace, **options
        )
        self.calls.append((tool, handler, dict(input_schema), dict(options)))
        return tool


def recorded_discovery(
    registry: ToolRegistry, recording: RecordingRegistry, *extra: Any
) -> list[Discovered]:
    """The tools `recording` took, as `Discovered` tools that register into `registry`.

    A tool's fingerprint is its spec (schema, description, safety, policy, source) and
    what its handler says it does (`describe_target()`: an HTTP operation's method and
    URL), with `extra` (what else the source said that the spec does not show).
    """
    found: list[Discovered] = []
    for tool, handler, schema, options in recording.calls:
        target = getattr(getattr(handler, "__self__", None), "describe_target", None)

        def register(
            replace: bool,
            handler: SchemaHandler = handler,
            schema: dict[str, Any] = schema,
            options: dict[str, Any] = options,
        ) -> RegisteredTool:
            return registry.register_schema(
                handler, input_schema=schema, replace=replace, **options
            )

        found.append(
            Discovered(
                name=tool.spec.name,
                fingerprint=fingerprint(
                    tool.spec.model_dump(mode="json"), target() if target else None, *extra
                ),
                register=register,
                input_schema=schema,
                origin=tool.spec.name,
            )
        )
    return found
