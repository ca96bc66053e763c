"""File uploads for OpenAPI tools: `multipart/form-data` and binary request bodies.

A file argument is an object with the bytes as `content_base64`, or `artifact_uri`: the
uri of an `ArtifactRef` in the worker's artifact store (an earlier tool's large output,
say), plus an optional `filename` and `content_type`. The bytes are decoded on the
worker when the request is built, so they are checked (valid base64, an artifact the
store holds and whose digest matches) before anything is sent.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

from durable_tools.tools._artifacts import default_artifact_store
from durable_tools.tools._context import ToolContext
from durable_tools.tools._errors import InvalidArguments
from durable_tools.tools._results import ArtifactRef

from ._http_request import BodyEncoder, EncodedBody

__all__ = [
    "binary_encoder",
    "file_schema",
    "is_binary_schema",
    "multipart_encoder",
    "multipart_schema",
]

_DIGEST = re.compile(r"^[0-9a-f]{64}$")


def file_schema(description: str | None = None) -> dict[str, Any]:
    """The input schema of one file argument."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "content_base64": {
                "type": "string",
                "contentEncoding": "base64",
                "description": "The file's bytes, base64-encoded.",
            },
            "artifact_uri": {
                "type": "string",
                "description": "Instead of content_base64: the uri of an artifact "
                "(from an earlier tool's result) whose bytes to send.",
            },
            "filename": {"type": "string", "description": "The file's name."},
            "content_type": {"type": "string", "description": "The file's media type."},
        },
        "oneOf": [{"required": ["content_base64"]}, {"required": ["artifact_uri"]}],
        "additionalProperties": False,
    }
    if description:
        schema["description"] = description
    return schema


def is_binary_schema(schema: Any) -> bool:
    """Whether an (OpenAPI 3.0 or 3.1) schema describes raw bytes rather than text."""
    if not isinstance(schema, Mapping):
        return False
    if schema.get("format") == "binary":  # 3.0
        return True
    # 3.1: a string with a media type and no text encoding is the bytes of a file.
    return "contentMediaType" in schema and "contentEncoding" not in schema


def multipart_schema(schema: dict[str, Any]) -> tuple[dict[str, Any], dict[str, bool]]:
    """The body schema with its file properties as file arguments.

    Returns:
        The schema, and the file properties (True: an array of files).
    """
    files: dict[str, bool] = {}
    properties = dict(schema.get("properties") or {})
    for name, prop in properties.items():
        many = isinstance(prop, Mapping) and prop.get("type") == "array"
        target = prop.get("items") if many else prop
        if is_binary_schema(target):
            description = prop.get("description") if isinstance(prop, Mapping) else None
            if many:
                properties[name] = {"type": "array", "items": file_schema()}
                if description:
                    properties[name]["description"] = description
            else:
                properties[name] = file_schema(description)
            files[name] = many
    return {**schema, "properties": properties}, files


def _artifact_bytes(uri: str, ctx: ToolContext, where: str) -> bytes:
    parts = urlsplit(uri)
    candidates = [parts.netloc, unquote(parts.path).rstrip("/").rsplit("/", 1)[-1]]
    digest = next((c for c in candidates if _DIGEST.match(c)), None)
    if digest is None:
        raise InvalidArguments(
            f"{where}.artifact_uri is not an artifact uri", errors=[f"$.{where}.artifact_uri"]
        )
    store = ctx.artifact_store if ctx.artifact_store is not None else default_artifact_store()
    try:
        return store.get(ArtifactRef(uri=uri, size=0, sha256=digest))
    except KeyError as exc:
        raise InvalidArguments(
            f"{where}.artifact_uri: {exc.args[0] if exc.args else 'not found'}",
            errors=[f"$.{where}.artifact_uri: not in the worker's artifact store"],
        ) from None


def _file(value: Any, ctx: ToolContext, where: str) -> tuple[str | None, bytes, str | None]:
    """`(filename, bytes, content type)` of a validated file argument."""
    if not isinstance(value, Mapping):
        raise InvalidArguments(f"{where} is not a file object", errors=[f"$.{where}"])
    if isinstance(value.get("artifact_uri"), str):
        data = _artifact_bytes(value["artifact_uri"], ctx, where)
    else:
        try:
            data = base64.b64decode(str(value.get("content_base64", "")), validate=True)
        except (binascii.Error, ValueError):
            raise InvalidArguments(
                f"{where}.content_base64 is not valid base64",
                errors=[f"$.{where}.content_base64: not base64"],
            ) from None
    filename = value.get("filename")
    kind = value.get("content_type")
    return (
        str(filename) if filename else None,
        data,
        str(kind) if kind else None,
    )


def binary_encoder(media_type: str) -> BodyEncoder:
    """Send the body argument's file as the raw request body."""
    wildcard = "*" in media_type

    def encode(body: Any, ctx: ToolContext) -> EncodedBody:
        _, data, kind = _file(body, ctx, "body")
        chosen = (kind or "application/octet-stream") if wildcard else media_type
        return EncodedBody(content=data, content_type=chosen)

    return encode


def _field_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping | list):
        return json.dumps(value)  # OpenAPI: objects and arrays in a part are JSON
    return str(value)


def multipart_encoder(files: Mapping[str, bool]) -> BodyEncoder:
    """Send the body argument as `multipart/form-data`: files as file parts, the rest as fields."""

    def encode(body: Any, ctx: ToolContext) -> EncodedBody:
        if not isinstance(body, Mapping):
            raise InvalidArguments("body is not an object", errors=["$.body"])
        parts: list[tuple[str, tuple[str | None, bytes, str | None]]] = []
        for name, value in body.items():
            if value is None:
                continue
            if name in files:
                items = value if files[name] and isinstance(value, list) else [value]
                for index, item in enumerate(items):
                    where = f"body.{name}" + (f"[{index}]" if files[name] else "")
                    filename, data, kind = _file(item, ctx, where)
                    # A file part needs a filename, or servers read it as a plain field.
                    parts.append(
                        (name, (filename or name, data, kind or "application/octet-stream"))
                    )
            elif isinstance(value, list) and not any(isinstance(v, Mapping) for v in value):
                parts.extend((name, (None, _field_text(v).encode(), None)) for v in value)
            else:
                parts.append((name, (None, _field_text(value).encode(), None)))
        return EncodedBody(files=parts)

    return encode
