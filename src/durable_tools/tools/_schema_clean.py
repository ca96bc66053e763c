"""Pydantic's JSON Schema made plain: `$ref`s inlined, `title` noise dropped.

Every provider accepts the result; recursive definitions stay under `$defs`. The
keyword tables say which values are subschemas, so data (enum values, defaults,
examples) and property names are never rewritten.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any, Literal

from pydantic import BaseModel

from ._names import ToolRegistrationError

__all__ = [
    "SCHEMA_LISTS",
    "SCHEMA_MAPS",
    "SCHEMA_SINGLE",
    "JsonSchema",
    "clean_schema",
    "schema_for_model",
]

JsonSchema = dict[str, Any]

# Keywords whose values are subschemas, by shape; everything else is data (enum values,
# defaults, examples) and must not be rewritten.
SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
SCHEMA_SINGLE = (
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
)


def schema_for_model(
    model: type[BaseModel], *, tool_name: str, mode: Literal["validation", "serialization"]
) -> JsonSchema:
    """The cleaned JSON Schema of a pydantic model.

    Raises:
        ToolRegistrationError: pydantic cannot express a field's type as JSON Schema.
    """
    try:
        raw = model.model_json_schema(mode=mode)
    except Exception as exc:
        raise ToolRegistrationError(
            f"tool {tool_name!r}: a type has no JSON Schema ({exc}); use JSON-able types "
            "or mark worker-side values with Injected(...)",
            rule="signature",
            tool_name=tool_name,
        ) from exc
    return clean_schema(raw)


def _subschemas(node: JsonSchema) -> Iterator[JsonSchema]:
    for key in SCHEMA_MAPS:
        value = node.get(key)
        if isinstance(value, dict):
            yield from (v for v in value.values() if isinstance(v, dict))
    for key in SCHEMA_LISTS:
        value = node.get(key)
        if isinstance(value, list):
            yield from (v for v in value if isinstance(v, dict))
    for key in SCHEMA_SINGLE:
        value = node.get(key)
        if isinstance(value, dict):
            yield value


def _all_nodes(node: JsonSchema) -> Iterator[JsonSchema]:
    yield node
    for child in _subschemas(node):
        yield from _all_nodes(child)


def _inline(node: Any, defs: JsonSchema, stack: frozenset[str], keep: set[str]) -> Any:
    if isinstance(node, list):
        return [_inline(item, defs, stack, keep) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        key = ref.removeprefix("#/$defs/")
        siblings = {k: _inline(v, defs, stack, keep) for k, v in node.items() if k != "$ref"}
        if key in stack or key not in defs:
            # A recursive model cannot be inlined: keep the reference and its definition.
            keep.add(key)
            return {"$ref": ref, **siblings}
        target = _inline(defs[key], defs, stack | {key}, keep)
        return {**target, **siblings}
    return {k: _inline(v, defs, stack, keep) for k, v in node.items()}


def clean_schema(schema: JsonSchema) -> JsonSchema:
    """Inline `$ref`s and drop pydantic's `title` noise, so every provider accepts it.

    Recursive definitions stay under `$defs` (they cannot be inlined). Property names
    are never touched, even one called `title`.
    """
    schema = copy.deepcopy(schema)
    defs: JsonSchema = schema.pop("$defs", {})
    keep: set[str] = set()
    result: JsonSchema = _inline(schema, defs, frozenset(), keep)
    kept: JsonSchema = {}
    pending = set(keep)
    while pending:
        key = pending.pop()
        found: set[str] = set()
        kept[key] = _inline(defs[key], defs, frozenset({key}), found)
        pending |= found - kept.keys()
    if kept:
        result["$defs"] = dict(sorted(kept.items()))
    for node in _all_nodes(result):
        if isinstance(node.get("title"), str):
            del node["title"]
    return result
