"""JSON Schema types, as far as a flow needs them: what a schema accepts, and a walk
into its fields, to tell at registration whether a value can reach a parameter."""

from __future__ import annotations

from typing import Any, Final

from durable_tools.tools._schema_clean import clean_schema

__all__ = ["MISSING", "JsonSchema", "compatible", "describe", "field_schema", "json_types"]

JsonSchema = dict[str, Any]

MISSING: Final[JsonSchema] = {"not": {}}
"""What `field_schema` answers for a field the schema says cannot exist."""

_ALL = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})


def _type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    return "object"


def json_types(schema: JsonSchema | None) -> frozenset[str] | None:
    """The JSON types a schema accepts; None when it does not say (anything goes).

    Reads `type`, `const`, `enum` and the branches of `anyOf`/`oneOf` (a union) and
    `allOf` (an intersection); an unresolved `$ref` counts as unknown.
    """
    if schema is None or not isinstance(schema, dict):
        return None
    if schema is MISSING or schema == MISSING:
        return frozenset()
    found: frozenset[str] | None = None

    def narrow(types: frozenset[str] | None) -> None:
        nonlocal found
        if types is not None:
            found = types if found is None else found & types

    if "const" in schema:
        narrow(frozenset({_type_of(schema["const"])}))
    if isinstance(schema.get("enum"), list):
        narrow(frozenset(_type_of(v) for v in schema["enum"]))
    kind = schema.get("type")
    if isinstance(kind, str):
        narrow(frozenset({kind}) & _ALL)
    elif isinstance(kind, list):
        narrow(frozenset(k for k in kind if isinstance(k, str)) & _ALL)
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and branches:
            each = [json_types(b) for b in branches]
            if all(t is not None for t in each):
                narrow(frozenset().union(*(t for t in each if t is not None)))
    for branch in schema.get("allOf", []) if isinstance(schema.get("allOf"), list) else []:
        narrow(json_types(branch))
    return found


def compatible(source: frozenset[str] | None, target: frozenset[str] | None) -> bool:
    """Whether a value of the source types can ever be valid for the target.

    Unknown types are compatible with everything; an integer is a number, and a number
    may be integral, so they overlap. Partial overlaps pass here: the node's own argument
    validation checks the actual value at run time.
    """
    if source is None or target is None:
        return True

    def widen(types: frozenset[str]) -> frozenset[str]:
        return types | {"number"} if "integer" in types else types

    if not source:  # a field that cannot exist
        return False
    return bool(widen(source) & widen(target))


def describe(types: frozenset[str] | None) -> str:
    """`string`, `integer or null`, `anything`: for error messages."""
    if types is None:
        return "anything"
    if not types:
        return "nothing (no such field)"
    return " or ".join(sorted(types))


def _branch_with_fields(schema: JsonSchema) -> JsonSchema:
    """The one object (or array) branch of an `anyOf`/`oneOf`, as `Optional[Model]` has."""
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list):
            shaped = [
                b for b in branches if isinstance(b, dict) and ("properties" in b or "items" in b)
            ]
            if len(shaped) == 1:
                return shaped[0]
    return schema


def field_schema(schema: JsonSchema | None, path: tuple[str, ...]) -> JsonSchema | None:
    """The schema of the value at `path` inside a value of `schema`.

    None when the schema does not say (unknown); `MISSING` when it says the field cannot
    exist (a closed object without it, or a scalar).
    """
    if schema is None:
        return None
    node: JsonSchema = clean_schema(schema) if "$defs" in schema else schema
    for part in path:
        node = _branch_with_fields(node)
        types = json_types(node)
        props = node.get("properties")
        if isinstance(props, dict) and part in props and isinstance(props[part], dict):
            node = props[part]
            continue
        items = node.get("items")
        if part.isdigit() and isinstance(items, dict):
            node = items
            continue
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            node = extra
            continue
        if isinstance(props, dict) and extra is not True:
            # Declared fields and nothing said about others: what a pydantic model's
            # schema looks like, and such a model never outputs an undeclared field.
            return MISSING
        if types is not None and "object" in types:
            return MISSING if extra is False else None
        if types is not None and not ({"object", "array"} & types):
            return MISSING
        return None
    return node
