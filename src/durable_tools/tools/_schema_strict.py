"""OpenAI strict function calling: rewriting a schema for it, and undoing its nulls.

Strict mode wants every object closed and every property required; an optional
argument becomes required-but-nullable. `make_strict` does the rewrite at registration,
`drop_added_nulls` removes the nulls it made the model send before validation, so the
Python defaults apply.
"""

from __future__ import annotations

import copy
from typing import Any

from ._names import ToolRegistrationError
from ._schema_clean import SCHEMA_LISTS, SCHEMA_MAPS, SCHEMA_SINGLE, JsonSchema

__all__ = ["drop_added_nulls", "make_strict"]

_TYPED = ("type", "anyOf", "oneOf", "allOf", "$ref", "enum", "const", "not")


def _nullable(prop: JsonSchema) -> JsonSchema:
    """`prop`, also accepting null: how strict mode says 'optional'."""
    if _accepts_null(prop, {}):
        return prop
    kind = prop.get("type")
    if isinstance(kind, str) and not ({"enum", "const"} & prop.keys()):
        return {**prop, "type": [kind, "null"]}
    if isinstance(prop.get("anyOf"), list):
        return {**prop, "anyOf": [*prop["anyOf"], {"type": "null"}]}
    wrapped = {k: v for k, v in prop.items() if k != "description"}
    result: JsonSchema = {"anyOf": [wrapped, {"type": "null"}]}
    if "description" in prop:
        result["description"] = prop["description"]
    return result


def _strictify(node: JsonSchema, path: str, tool_name: str) -> JsonSchema:
    def fail(why: str) -> ToolRegistrationError:
        return ToolRegistrationError(
            f"tool {tool_name!r} is strict, but the schema at {path} {why}; "
            "strict function calling needs every object's properties to be declared",
            rule="strict",
            tool_name=tool_name,
        )

    # OpenAI strict mode does not support `default`; the default still applies on our side
    # because a null for an optional argument is dropped before validation into Python.
    node = {k: v for k, v in node.items() if k != "default"}
    for key in SCHEMA_MAPS:
        if isinstance(node.get(key), dict):
            node[key] = {
                name: _strictify(sub, f"{path}.{key}.{name}", tool_name)
                if isinstance(sub, dict)
                else sub
                for name, sub in node[key].items()
            }
    for key in SCHEMA_LISTS:
        if isinstance(node.get(key), list):
            node[key] = [
                _strictify(sub, f"{path}.{key}[{i}]", tool_name) if isinstance(sub, dict) else sub
                for i, sub in enumerate(node[key])
            ]
    for key in SCHEMA_SINGLE:
        if isinstance(node.get(key), dict):
            node[key] = _strictify(node[key], f"{path}.{key}", tool_name)
    if not (set(_TYPED) & node.keys()):
        raise fail("has no type (Any)")
    if node.get("type") == "object" or "properties" in node:
        extra = node.get("additionalProperties")
        if extra not in (None, False) or "patternProperties" in node:
            raise fail("allows free-form keys (a dict)")
        if "properties" not in node and node.get("type") == "object" and path != "$":
            raise fail("is a free-form object")
        props: JsonSchema = node.get("properties", {})
        required = set(node.get("required", []))
        node["properties"] = {
            name: sub if name in required else _nullable(sub) for name, sub in props.items()
        }
        node["required"] = list(props)
        node["additionalProperties"] = False
    return node


def make_strict(schema: JsonSchema, *, tool_name: str) -> JsonSchema:
    """Rewrite a cleaned schema for OpenAI strict function calling.

    Every object gets `additionalProperties: false` and lists all its properties as
    required; properties that were optional become nullable instead.

    Raises:
        ToolRegistrationError: the schema has free-form objects or untyped values,
            which strict mode cannot express.
    """
    return _strictify(copy.deepcopy(schema), "$", tool_name)


def _resolve(schema: JsonSchema, defs: JsonSchema) -> JsonSchema:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = defs.get(ref.removeprefix("#/$defs/"))
        if isinstance(target, dict):
            return target
    return schema


def _accepts_null(schema: JsonSchema, defs: JsonSchema) -> bool:
    schema = _resolve(schema, defs)
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if "const" in schema and schema["const"] is None:
        return True
    if isinstance(schema.get("enum"), list) and None in schema["enum"]:
        return True
    return any(
        isinstance(branch, dict) and _accepts_null(branch, defs)
        for key in ("anyOf", "oneOf")
        for branch in schema.get(key, [])
    )


def drop_added_nulls(value: Any, lax_schema: JsonSchema) -> Any:
    """Remove the nulls a strict schema forced the model to send for omitted arguments.

    In strict mode an optional argument is required-but-nullable, so the model sends
    `null` to mean "not given". Where the original (lax) schema does not accept null,
    the key is dropped so the Python default applies.
    """
    defs: JsonSchema = lax_schema.get("$defs", {})

    def walk(item: Any, schema: JsonSchema) -> Any:
        schema = _resolve(schema, defs)
        if isinstance(item, dict):
            props = schema.get("properties")
            if not isinstance(props, dict):
                branches = [
                    _resolve(b, defs) for b in schema.get("anyOf", []) if isinstance(b, dict)
                ]
                objects = [b for b in branches if isinstance(b.get("properties"), dict)]
                if len(objects) != 1:
                    return item
                schema, props = objects[0], objects[0]["properties"]
            required = set(schema.get("required", []))
            out: dict[str, Any] = {}
            for key, sub in item.items():
                prop = props.get(key)
                if not isinstance(prop, dict):
                    out[key] = sub
                elif sub is None and key not in required and not _accepts_null(prop, defs):
                    continue
                else:
                    out[key] = walk(sub, prop)
            return out
        if isinstance(item, list) and isinstance(schema.get("items"), dict):
            return [walk(x, schema["items"]) for x in item]
        return item

    return walk(value, lax_schema)
