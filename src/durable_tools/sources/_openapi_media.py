"""Request and response media types of an OpenAPI operation: what its body becomes.

JSON bodies are sent as JSON, form bodies url-encoded, `text/*` as text,
`multipart/form-data` and binary types (`application/octet-stream`, `image/*`, `*/*`,
...) as file uploads (`_openapi_files`). Anything else (XML, say) cannot be sent
faithfully, so the operation is skipped with a warning rather than sent without a body.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._http_request import BodyEncoder
from ._openapi_files import (
    binary_encoder,
    file_schema,
    is_binary_schema,
    multipart_encoder,
    multipart_schema,
)
from ._openapi_schema import RefResolver, to_json_schema

__all__ = ["SkipOperation", "accept_header", "body_schema", "pick_media"]


class SkipOperation(Exception):
    """This operation cannot become a tool (said why in the message)."""


def _media_kind(media: str, spec: Mapping[str, Any]) -> str | None:
    """How a request body of this media type is sent; None: not supported."""
    m = media.split(";")[0].strip().lower()
    if "json" in m:
        return "json"
    if m == "application/x-www-form-urlencoded":
        return "form"
    if m == "multipart/form-data":
        return "multipart"
    if m.startswith("text/"):
        return "text"
    if "xml" in m or m.startswith("multipart/"):
        return None
    major = m.split("/")[0]
    if (
        m in ("application/octet-stream", "*/*", "application/pdf", "application/zip")
        or major in ("image", "audio", "video", "font")
        or is_binary_schema(spec.get("schema"))
    ):
        return "binary"
    return None


_KIND_ORDER = ("json", "form", "multipart", "text", "binary")


def pick_media(content: Mapping[str, Any]) -> tuple[str, str, Mapping[str, Any]] | None:
    """The media type, its kind and its media object: JSON first, then forms, files, text."""
    found: list[tuple[int, str, str, Mapping[str, Any]]] = []
    for media, spec in content.items():
        spec = spec if isinstance(spec, Mapping) else {}
        kind = _media_kind(str(media), spec)
        if kind is not None:
            preferred = 0 if media == "application/json" else 1
            found.append((_KIND_ORDER.index(kind) * 2 + preferred, str(media), kind, spec))
    if not found:
        return None
    _, media, kind, spec = min(found, key=lambda item: item[0])
    return media, kind, spec


def accept_header(operation: Mapping[str, Any], resolver: RefResolver) -> str | None:
    """The JSON media type of the operation's success response, for `Accept`."""
    responses = operation.get("responses")
    if not isinstance(responses, Mapping):
        return None
    # Codes as text (YAML reads an unquoted `200:` as an int), success codes first.
    by_code = {str(code): response for code, response in responses.items()}
    for code in sorted(by_code, key=lambda c: (not c.startswith("2"), c)):
        response = resolver.deref(by_code[code])
        content = response.get("content") if isinstance(response, Mapping) else None
        if not (code.startswith("2") or code == "default") or not isinstance(content, Mapping):
            continue
        kinds = [str(m) for m in content if "json" in str(m).lower()]
        if kinds:
            return "application/json" if "application/json" in kinds else kinds[0]
    return None


def body_schema(
    body: Mapping[str, Any], resolver: RefResolver
) -> tuple[dict[str, Any], str, BodyEncoder | None]:
    """The `body` property's schema, the media type and (for files) the encoder."""
    picked = pick_media(body.get("content") or {})
    if picked is None:
        kinds = ", ".join(body.get("content") or {}) or "none"
        raise SkipOperation(f"request body media types ({kinds}) are not supported")
    media_type, kind, media = picked
    encoder: BodyEncoder | None = None
    if kind == "binary":
        schema = file_schema()
        encoder = binary_encoder(media_type)
    else:
        schema = to_json_schema(media.get("schema") or {}, resolver)
        if not isinstance(schema, dict):
            schema = {}
        if kind == "multipart":
            if schema.get("type") not in (None, "object") or not schema.get("properties"):
                raise SkipOperation(
                    "a multipart/form-data body needs an object schema with properties"
                )
            schema, files = multipart_schema(schema)
            encoder = multipart_encoder(files)
    if body.get("description") and "description" not in schema:
        schema["description"] = str(body["description"])
    return schema, media_type, encoder
