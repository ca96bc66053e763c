"""OpenAPI schemas as the JSON Schema (Draft 2020-12) a tool's input schema needs.

Local `$ref`s (`#/components/...`) are inlined, so the model reads one self-contained
schema; a reference cycle becomes an open schema at the point it repeats. OpenAPI 3.0
dialect (`nullable`, boolean `exclusiveMinimum`, `example`) is translated; 3.1 schemas
are JSON Schema already and pass through. Request schemas drop `readOnly` properties,
which a client never sends.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["OpenAPIError", "RefResolver", "local_pointer", "refers_into_paths", "to_json_schema"]

# OpenAPI-only keywords that JSON Schema validators do not know; dropped.
_DROP = frozenset({"discriminator", "xml", "externalDocs", "example", "deprecated"})
# Keywords whose value is a schema, a list of schemas, or a map of schemas.
_ONE = ("items", "not", "additionalProperties", "contains", "propertyNames", "if", "then", "else")
_MANY = ("allOf", "anyOf", "oneOf", "prefixItems")
_MAP = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")


class OpenAPIError(ValueError):
    """The OpenAPI document cannot be read or used as given."""


def local_pointer(ref: str) -> list[str] | None:
    """The parts of a local `$ref`'s JSON pointer, as `RefResolver.lookup` follows them.

    Leading slashes are forgiven (`#paths/...` and `#//paths/...` mean `#/paths/...`)
    and `~1`/`~0` are unescaped. Everything that asks where a reference points uses
    this, so that no check can read a reference otherwise than the resolver does.

    Returns:
        The parts (empty for `#`, the whole document); None for a reference that is
        not local (not inlined when the document was loaded).
    """
    if not ref.startswith("#"):
        return None
    if ref == "#":
        return []
    return [raw.replace("~1", "/").replace("~0", "~") for raw in ref[1:].lstrip("/").split("/")]


def refers_into_paths(document: Any) -> bool:
    """Whether any local `$ref` anywhere in `document` can reach into its `paths`.

    A reference to `paths` or below, or to the whole document (`#`), counts: the
    operation using it (or a component using it) then depends on another path item.
    """
    stack: list[Any] = [document]
    while stack:  # not recursive: a document may nest deeper than Python's stack
        node = stack.pop()
        if isinstance(node, Mapping):
            ref = node.get("$ref")
            if isinstance(ref, str):
                parts = local_pointer(ref)
                if parts is not None and (not parts or parts[0] == "paths"):
                    return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


class RefResolver:
    """Resolves local JSON pointers (`#/components/schemas/Pet`) in one document.

    External references were inlined when the document was loaded (`_openapi_load`);
    the ones that could not be are reported with their reason when used.
    """

    def __init__(
        self, document: Mapping[str, Any], unresolved: Mapping[str, str] | None = None
    ) -> None:
        self.document = document
        self.unresolved = dict(unresolved or {})
        """External references that could not be inlined, with the reason."""

    def lookup(self, ref: str) -> Any:
        """The value a local `$ref` points to.

        Raises:
            OpenAPIError: a remote reference or a pointer that leads nowhere.
        """
        parts = local_pointer(ref)
        if parts is None:
            why = self.unresolved.get(ref, "not inlined")
            raise OpenAPIError(f"cannot resolve $ref {ref!r}: {why}")
        node: Any = self.document
        for part in parts:
            if isinstance(node, Mapping) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                raise OpenAPIError(f"$ref {ref!r} points to nothing in the document")
        return node

    def deref(self, value: Any, seen: tuple[str, ...] = ()) -> Any:
        """Follow `$ref` chains of a non-schema object (a parameter, a request body)."""
        while isinstance(value, Mapping) and isinstance(value.get("$ref"), str):
            ref = value["$ref"]
            if ref in seen:
                raise OpenAPIError(f"$ref cycle through {ref!r}")
            seen = (*seen, ref)
            value = self.lookup(ref)
        return value


def to_json_schema(
    schema: Any,
    resolver: RefResolver,
    *,
    request: bool = True,
    _seen: tuple[str, ...] = (),
) -> Any:
    """A self-contained JSON Schema for an OpenAPI schema object.

    Args:
        schema: The OpenAPI schema (3.0 or 3.1).
        resolver: Resolves local `$ref`s.
        request: Drop `readOnly` properties (the schema describes what is sent).
    """
    if isinstance(schema, bool):
        return schema
    if not isinstance(schema, Mapping):
        return {}
    ref = schema.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        if ref in _seen:
            return {"description": f"(recursive: same shape as {name})"}
        target = to_json_schema(
            resolver.lookup(ref), resolver, request=request, _seen=(*_seen, ref)
        )
        siblings = {k: v for k, v in schema.items() if k != "$ref"}
        if siblings and isinstance(target, dict):
            # 3.1 allows keywords next to $ref (a description, say): they win.
            extra = to_json_schema(siblings, resolver, request=request, _seen=_seen)
            return {**target, **extra}
        return target

    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _DROP or key.startswith("x-") or key in ("nullable", "readOnly", "writeOnly"):
            continue
        if key in _ONE:
            out[key] = to_json_schema(value, resolver, request=request, _seen=_seen)
        elif key in _MANY and isinstance(value, list):
            out[key] = [to_json_schema(v, resolver, request=request, _seen=_seen) for v in value]
        elif key in _MAP and isinstance(value, Mapping):
            out[key] = {
                str(k): to_json_schema(v, resolver, request=request, _seen=_seen)
                for k, v in value.items()
                if not (key == "properties" and request and _read_only(v, resolver))
            }
        else:
            out[key] = value
    if request and isinstance(out.get("required"), list) and "properties" in schema:
        dropped = {
            k for k, v in (schema.get("properties") or {}).items() if _read_only(v, resolver)
        }
        out["required"] = [r for r in out["required"] if r not in dropped]
        if not out["required"]:
            del out["required"]
    _translate_30(schema, out)
    return out


def _read_only(value: Any, resolver: RefResolver) -> bool:
    try:
        target = resolver.deref(value)
    except OpenAPIError:
        return False
    return isinstance(target, Mapping) and target.get("readOnly") is True


def _translate_30(source: Mapping[str, Any], out: dict[str, Any]) -> None:
    """OpenAPI 3.0 keywords that mean something else in JSON Schema 2020-12."""
    if source.get("nullable") is True:
        kind = out.get("type")
        if isinstance(kind, str):
            out["type"] = [kind, "null"]
        elif isinstance(kind, list) and "null" not in kind:
            out["type"] = [*kind, "null"]
        elif "enum" in out and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
    for bound, exclusive in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
        flag = out.get(exclusive)
        if isinstance(flag, bool):
            if flag and bound in out:
                out[exclusive] = out.pop(bound)
            else:
                del out[exclusive]
    if "example" in source and "examples" not in out:
        out["examples"] = [source["example"]]
