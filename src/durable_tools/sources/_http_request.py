"""From validated tool arguments to the parts of an HTTP request.

Path, query, header and cookie parameters are serialised the way OpenAPI's default
styles say (`simple` for path and header, `form` for query); the body is JSON, a form,
raw text or whatever a `BodyEncoder` builds on the worker.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote

from durable_tools.tools._context import ToolContext
from durable_tools.tools._errors import InvalidArguments

from ._http_auth import QueryPairs

__all__ = [
    "IDEMPOTENT_METHODS",
    "PLACEHOLDER",
    "SAFE_METHODS",
    "BodyEncoder",
    "EncodedBody",
    "HttpParameter",
    "ParameterLocation",
    "RequestBody",
    "encode_body",
    "fill_url",
    "method_safety",
    "parameter_parts",
]

ParameterLocation = Literal["path", "query", "header", "cookie"]

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
IDEMPOTENT_METHODS = SAFE_METHODS | {"PUT", "DELETE"}
PLACEHOLDER = re.compile(r"\{([^{}]+)\}")
"""A `{name}` path placeholder in a URL template."""


def method_safety(method: str) -> dict[str, bool]:
    """Safety flags an HTTP method implies (RFC 9110): safe methods read, PUT/DELETE repeat."""
    upper = method.upper()
    return {
        "read_only": upper in SAFE_METHODS,
        "idempotent": upper in IDEMPOTENT_METHODS,
        "networked": True,
    }


@dataclass(frozen=True)
class HttpParameter:
    """One argument that goes into the request somewhere other than the body."""

    name: str
    """The name on the wire."""
    location: ParameterLocation
    argument: str
    """The property name in the tool's input schema (usually `name`)."""
    explode: bool = True
    """Arrays and objects as repeated query parameters (OpenAPI's default for `form`)."""


@dataclass(frozen=True)
class EncodedBody:
    """A request body built by a `BodyEncoder` (file uploads: multipart or raw bytes)."""

    content: bytes | None = None
    """Raw bytes, sent with `content_type`."""
    files: list[tuple[str, tuple[str | None, bytes, str | None]]] | None = None
    """Multipart parts as httpx takes them: `(field, (filename, data, content type))`;
    a part without a filename is a plain form field."""
    content_type: str | None = None


BodyEncoder = Callable[[Any, ToolContext], EncodedBody]
"""Turns the body argument into bytes on the worker (it may read the artifact store)."""


@dataclass(frozen=True)
class RequestBody:
    """The body as httpx's `build_request` takes it: at most one part is set."""

    content: bytes | None = None
    json: Any = None
    form: dict[str, Any] | None = None
    files: list[tuple[str, tuple[str | None, bytes, str | None]]] | None = None


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    return str(value)


def _query_pairs(param: HttpParameter, value: Any) -> QueryPairs:
    if isinstance(value, list | tuple):
        if param.explode:
            return [(param.name, _text(v)) for v in value]
        return [(param.name, ",".join(_text(v) for v in value))]
    if isinstance(value, Mapping):
        if param.explode:
            return [(str(k), _text(v)) for k, v in value.items()]
        return [(param.name, ",".join(f"{k},{_text(v)}" for k, v in value.items()))]
    return [(param.name, _text(value))]


def _simple(value: Any) -> str:
    """OpenAPI `simple` style: arrays comma-separated (path and header parameters)."""
    if isinstance(value, list | tuple):
        return ",".join(_text(v) for v in value)
    if isinstance(value, Mapping):
        return ",".join(f"{k},{_text(v)}" for k, v in value.items())
    return _text(value)


def fill_url(
    template: str, parameters: Sequence[HttpParameter], arguments: Mapping[str, Any]
) -> str:
    """The URL with each `{placeholder}` replaced by its URL-encoded argument.

    Raises:
        InvalidArguments: a path argument is missing, empty, `.` or `..` (which would
            change the path the request goes to).
    """
    by_name = {p.name: p for p in parameters if p.location == "path"}

    def fill(match: re.Match[str]) -> str:
        placeholder = match.group(1)
        param = by_name.get(placeholder)
        key = param.argument if param else placeholder
        if key not in arguments or arguments[key] is None:
            raise InvalidArguments(
                f"path parameter {key!r} is required", errors=[f"$.{key}: is required"]
            )
        text = _simple(arguments[key])
        if text in ("", ".", ".."):
            raise InvalidArguments(
                f"path parameter {key!r} may not be {text!r}",
                errors=[f"$.{key}: may not be empty, '.' or '..'"],
            )
        return quote(text, safe="")

    return PLACEHOLDER.sub(fill, template)


def parameter_parts(
    parameters: Sequence[HttpParameter], arguments: Mapping[str, Any], headers: dict[str, str]
) -> QueryPairs:
    """Put the query, header and cookie arguments in place (path ones: `fill_url`).

    Header and cookie parameters are added to `headers` in place; the query pairs are
    returned. Arguments that are None are left out.
    """
    query: QueryPairs = []
    cookies: list[str] = []
    for param in parameters:
        value = arguments.get(param.argument)
        if value is None or param.location == "path":
            continue
        if param.location == "query":
            query.extend(_query_pairs(param, value))
        elif param.location == "header":
            headers[param.name] = _simple(value)
        else:
            cookies.append(f"{param.name}={quote(_simple(value), safe='')}")
    if cookies:
        headers["Cookie"] = "; ".join(cookies)
    return query


def encode_body(
    body: Any,
    media_type: str,
    encoder: BodyEncoder | None,
    ctx: ToolContext,
    headers: dict[str, str],
) -> RequestBody:
    """Encode the body argument for `media_type`, or with `encoder` when there is one.

    Sets `Content-Type` in `headers` where httpx would not: an encoder's own type
    replaces any, a raw body's media type is added unless a header already set one.
    """
    if encoder is not None:
        encoded = encoder(body, ctx)
        if encoded.content_type:
            headers["Content-Type"] = encoded.content_type
        return RequestBody(content=encoded.content, files=encoded.files)
    if "json" in media_type:
        return RequestBody(json=body)
    if media_type == "application/x-www-form-urlencoded" and isinstance(body, Mapping):
        return RequestBody(form={str(k): _simple(v) for k, v in body.items()})
    content = body.encode() if isinstance(body, str) else _text(body).encode()
    headers.setdefault("Content-Type", media_type)
    return RequestBody(content=content)
