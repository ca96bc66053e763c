"""One operation of an OpenAPI document: found in its paths, and turned into an input
schema and the wire format of its calls (parameters, body, `Accept`)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from ._http_auth import AUTH_HEADER_NAMES
from ._http_request import BodyEncoder, HttpParameter
from ._openapi_media import SkipOperation, accept_header, body_schema
from ._openapi_schema import RefResolver, to_json_schema

__all__ = ["BuiltOperation", "Operation", "build_operation", "document_operations"]

_METHODS = ("get", "put", "post", "delete", "options", "head", "patch")
# Headers the HTTP client owns; a document that lists them as parameters is ignored there.
_TRANSPORT_HEADERS = frozenset(
    {"content-type", "content-length", "host", "accept-encoding", "connection", "idempotency-key"}
)


@dataclass(frozen=True)
class Operation:
    """An operation as its document states it, with the path item it belongs to."""

    method: str
    path: str
    operation: Mapping[str, Any]
    path_item: Mapping[str, Any]

    @property
    def operation_id(self) -> str | None:
        """The `operationId`, if the document gives one."""
        value = self.operation.get("operationId")
        return str(value) if value else None

    @property
    def tags(self) -> tuple[str, ...]:
        """The operation's tags."""
        return tuple(str(t) for t in self.operation.get("tags") or ())


def document_operations(document: Mapping[str, Any], resolver: RefResolver) -> Iterator[Operation]:
    """Every operation under the document's `paths`, in document order."""
    for path, item in (document.get("paths") or {}).items():
        path_item = resolver.deref(item)
        if not isinstance(path_item, Mapping):
            continue
        for method in _METHODS:
            operation = path_item.get(method)
            if isinstance(operation, Mapping):
                yield Operation(method.upper(), str(path), operation, path_item)


@dataclass(frozen=True)
class BuiltOperation:
    """What one operation becomes: its input schema and how a call goes on the wire."""

    schema: dict[str, Any]
    parameters: tuple[HttpParameter, ...]
    body_argument: str | None
    media_type: str
    encoder: BodyEncoder | None
    accept: str | None


def build_operation(
    op: Operation,
    resolver: RefResolver,
    *,
    reserved_headers: set[str],
    reserved_params: set[tuple[str, str]],
) -> BuiltOperation:
    """The input schema and wire format of `op`.

    Raises:
        SkipOperation: the operation cannot become a tool (the message says why).
        OpenAPIError: a `$ref` it uses cannot be resolved.
    """
    merged: dict[tuple[str, str], Mapping[str, Any]] = {}
    for raw in [*(op.path_item.get("parameters") or []), *(op.operation.get("parameters") or [])]:
        param = resolver.deref(raw)
        if isinstance(param, Mapping) and "name" in param and "in" in param:
            merged[(str(param["in"]), str(param["name"]))] = param

    properties: dict[str, Any] = {}
    required: list[str] = []
    wire: list[HttpParameter] = []
    body = (
        resolver.deref(op.operation.get("requestBody")) if "requestBody" in op.operation else None
    )
    taken = {"body"} if body else set()
    for (location, name), param in merged.items():
        lower = name.lower()
        if location not in ("path", "query", "header", "cookie"):
            continue
        if location == "header" and (
            lower in AUTH_HEADER_NAMES or lower in reserved_headers or lower in _TRANSPORT_HEADERS
        ):
            continue  # credentials and transport headers never come from the model
        if location != "path" and (location, lower) in reserved_params:
            continue
        schema_source: Any = param.get("schema")
        if schema_source is None and isinstance(param.get("content"), Mapping):
            contents: list[Any] = list(param["content"].values())
            schema_source = contents[0].get("schema") if contents else None
        schema = to_json_schema(schema_source or {}, resolver)
        if not isinstance(schema, dict):
            schema = {}
        if param.get("description") and "description" not in schema:
            schema["description"] = str(param["description"])
        argument = name
        if argument in taken:
            argument = f"{name}_{location}"
        taken.add(argument)
        properties[argument] = schema
        if param.get("required") or location == "path":
            required.append(argument)
        style = param.get("style", "form" if location in ("query", "cookie") else "simple")
        explode = bool(param.get("explode", style == "form"))
        wire.append(HttpParameter(name, location, argument, explode))  # type: ignore[arg-type]

    for placeholder in re.findall(r"\{([^{}]+)\}", op.path):
        if ("path", placeholder) not in merged:
            raise SkipOperation(f"path parameter {{{placeholder}}} is not declared")

    body_argument: str | None = None
    media_type = "application/json"
    encoder: BodyEncoder | None = None
    if body is not None and not isinstance(body, Mapping):
        raise SkipOperation("its requestBody is not an object")
    if isinstance(body, Mapping):
        properties["body"], media_type, encoder = body_schema(body, resolver)
        body_argument = "body"
        if body.get("required"):
            required.append("body")

    input_schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        input_schema["required"] = required
    try:
        Draft202012Validator.check_schema(input_schema)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.path)
        raise SkipOperation(f"invalid schema at {where or 'the top'}: {exc.message}") from None
    return BuiltOperation(
        input_schema,
        tuple(wire),
        body_argument,
        media_type,
        encoder,
        accept_header(op.operation, resolver),
    )
