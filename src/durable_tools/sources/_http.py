"""HTTP tools: one request per call, with worker-side auth and classified failures.

`HttpOperation` is the execution half shared by OpenAPI tools (`attach_openapi`) and
plain HTTP tools (`http_tool`): it turns validated arguments into a request, sends it on
a shared client, and turns the response into a result or a classified `ToolError`.

Credentials never come from the model: auth objects read worker-side secrets or the
run's OAuth grant when the request is built, the headers and query parameters they set
are not in any input schema, and error messages never quote them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import quote

import httpx

from durable_tools._http_clients import aclose_shared_clients, shared_client
from durable_tools.tools._artifacts import ArtifactStore
from durable_tools.tools._classify import parse_retry_after
from durable_tools.tools._context import ToolContext
from durable_tools.tools._errors import (
    InvalidArguments,
    NeedsAuthorization,
    ToolExecutionError,
    ToolTimeout,
)
from durable_tools.tools._names import ToolRegistrationError
from durable_tools.tools._registry import RegisteredTool, ToolRegistry
from durable_tools.tools._results import ContentBlock, ToolResult
from durable_tools.tools._scrub import scrub, scrub_value
from durable_tools.tools._spec import OAuthRequirement

__all__ = [
    "AUTH_HEADER_NAMES",
    "BearerSecret",
    "BodyEncoder",
    "EncodedBody",
    "HeaderSecret",
    "HttpAuth",
    "HttpOperation",
    "HttpParameter",
    "OAuthBearer",
    "QuerySecret",
    "aclose_shared_clients",
    "http_tool",
    "method_safety",
    "shared_client",
]

ParameterLocation = Literal["path", "query", "header", "cookie"]

AUTH_HEADER_NAMES = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "cookie",
        "x-api-key",
        "api-key",
        "apikey",
        "x-auth-token",
        "x-access-token",
        "x-csrf-token",
    }
)
"""Header names (lower case) the model may never set: dropped from every input schema."""

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_IDEMPOTENT_METHODS = _SAFE_METHODS | {"PUT", "DELETE"}
_PLACEHOLDER = re.compile(r"\{([^{}]+)\}")
_DEFAULT_ERROR_BODY = 2000
_MAX_URL_IN_MESSAGE = 200


def method_safety(method: str) -> dict[str, bool]:
    """Safety flags an HTTP method implies (RFC 9110): safe methods read, PUT/DELETE repeat."""
    upper = method.upper()
    return {
        "read_only": upper in _SAFE_METHODS,
        "idempotent": upper in _IDEMPOTENT_METHODS,
        "networked": True,
    }


# ------------------------------------------------------------------------- auth


class HttpAuth:
    """Worker-side credentials for a request. Subclasses say what they set and where."""

    def headers(self, ctx: ToolContext) -> dict[str, str]:
        """Headers to add; read secrets from `ctx` here, at call time."""
        return {}

    def query(self, ctx: ToolContext) -> dict[str, str]:
        """Query parameters to add (for APIs that take a key in the URL)."""
        return {}

    def reserved_headers(self) -> frozenset[str]:
        """Header names (lower case) this auth sets; the model may never set them."""
        return frozenset()

    def reserved_query(self) -> frozenset[str]:
        """Query parameter names this auth sets; the model may never set them."""
        return frozenset()

    def requirement(self) -> OAuthRequirement | None:
        """The OAuth grant the tools need, if any."""
        return None

    def on_unauthorized(self, status: int) -> Exception | None:
        """An error to raise for a 401/403 instead of the default, or None."""
        return None

    def secret_values(self, ctx: ToolContext) -> list[str]:
        """The credentials this auth sends, scrubbed from whatever the service answers
        (APIs echo a query key in error bodies and in pagination links).

        The default: every query and header value it sets, and the last word of each
        header value (the token after `Bearer`).
        """
        values = [*self.query(ctx).values(), *self.headers(ctx).values()]
        return [*values, *(v.split()[-1] for v in values if len(v.split()) > 1)]


@dataclass(frozen=True)
class BearerSecret(HttpAuth):
    """`Authorization: Bearer <secret>` from a worker-side secret.

    Args:
        secret_name: The secret's name on the worker (`ctx.secret(secret_name)`).
    """

    secret_name: str
    header: str = "Authorization"
    """The header to set."""
    scheme: str = "Bearer"
    """The word before the token; empty for none."""

    def headers(self, ctx: ToolContext) -> dict[str, str]:
        token = ctx.secret(self.secret_name)
        return {self.header: f"{self.scheme} {token}" if self.scheme else token}

    def reserved_headers(self) -> frozenset[str]:
        return frozenset({self.header.lower()})


@dataclass(frozen=True)
class HeaderSecret(HttpAuth):
    """Any header (`X-API-Key: <secret>`) from a worker-side secret.

    Args:
        header: The header name.
        secret_name: The secret's name on the worker.
    """

    header: str
    secret_name: str
    prefix: str = ""
    """Text put before the secret, e.g. `"Token "`."""

    def headers(self, ctx: ToolContext) -> dict[str, str]:
        return {self.header: f"{self.prefix}{ctx.secret(self.secret_name)}"}

    def reserved_headers(self) -> frozenset[str]:
        return frozenset({self.header.lower()})


@dataclass(frozen=True)
class QuerySecret(HttpAuth):
    """A query parameter (`?api_key=<secret>`) from a worker-side secret.

    Args:
        param: The query parameter's name.
        secret_name: The secret's name on the worker.
    """

    param: str
    secret_name: str

    def query(self, ctx: ToolContext) -> dict[str, str]:
        return {self.param: ctx.secret(self.secret_name)}

    def reserved_query(self) -> frozenset[str]:
        return frozenset({self.param})


@dataclass(frozen=True)
class OAuthBearer(HttpAuth):
    """`Authorization: Bearer <token>` from the OAuth grant of the run's user.

    The tools get `oauth=OAuthRequirement(provider, scopes)`, so the worker resolves the
    user's token (or the run pauses for authorization) before each call. A 401 from the
    API pauses the run again for a fresh grant.

    Args:
        provider: The OAuth provider's name on the worker's broker. None: pass
            `oauth=OAuthRequirement(...)` yourself (per tool or in `defaults`).
        scopes: Scopes every tool needs; OpenAPI operations add their own.
    """

    provider: str | None = None
    scopes: tuple[str, ...] = ()

    def headers(self, ctx: ToolContext) -> dict[str, str]:
        if not ctx.access_token:
            raise NeedsAuthorization(f"tool {ctx.tool_name!r} needs the user's OAuth grant")
        return {"Authorization": f"Bearer {ctx.access_token}"}

    def reserved_headers(self) -> frozenset[str]:
        return frozenset({"authorization"})

    def requirement(self) -> OAuthRequirement | None:
        if self.provider is None:
            return None
        return OAuthRequirement(provider=self.provider, scopes=self.scopes)

    def on_unauthorized(self, status: int) -> Exception | None:
        if status == 401:
            return NeedsAuthorization(
                "the API rejected the user's OAuth token (HTTP 401); it needs a new grant"
            )
        return None


def as_auth_list(auth: HttpAuth | Sequence[HttpAuth] | None) -> tuple[HttpAuth, ...]:
    """Normalise the `auth=` option to a tuple."""
    if auth is None:
        return ()
    if isinstance(auth, HttpAuth):
        return (auth,)
    return tuple(auth)


# ---------------------------------------------------------------------- clients

# Pooled per base URL and event loop, shared with the model adapter.


# -------------------------------------------------------------------- execution


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


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    return str(value)


def _query_pairs(
    param: HttpParameter, value: Any
) -> list[tuple[str, str | int | float | bool | None]]:
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


def _bounded(text: str, limit: int) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    return text[:limit] + f"... [{len(text) - limit} more characters]"


@dataclass
class HttpOperation:
    """How one HTTP tool builds its request and reads the response.

    The registered handler is `handle`; `timeout` is set from the tool's policy once
    the tool is registered.
    """

    method: str
    url_template: str
    """The full URL with `{placeholders}` for path parameters."""
    parameters: tuple[HttpParameter, ...] = ()
    body_argument: str | None = None
    """The argument sent as the request body, if any."""
    body_from_rest: bool = False
    """Send the arguments that are not parameters as a JSON object body (`http_tool`)."""
    body_media_type: str = "application/json"
    body_encoder: BodyEncoder | None = None
    """Builds the body instead of `body_media_type`'s default encoding (file uploads)."""
    accept: str | None = None
    """The `Accept` header, unless `headers` or a header parameter sets one."""
    auth: tuple[HttpAuth, ...] = ()
    headers: Mapping[str, str] = field(default_factory=dict)
    """Constant headers (worker-side, not in the schema)."""
    base_url: str = ""
    """The key of the shared client."""
    client: httpx.AsyncClient | None = None
    """A client of your own instead of the shared one."""
    idempotency_header: str | None = "Idempotency-Key"
    """Sent with the call's idempotency key on methods that change things; None: never."""
    timeout: float = 60.0
    max_error_body: int = _DEFAULT_ERROR_BODY
    """Characters of a failed response's body quoted in the error the model reads."""
    tool_name: str = ""

    safe_to_repeat: bool | None = None
    """Whether repeating the request after an unknown outcome is harmless; None: from
    the method. `bind` takes it from the tool's safety (which overrides may change)."""

    def __post_init__(self) -> None:
        if self.safe_to_repeat is None:
            self.safe_to_repeat = self.method.upper() in _IDEMPOTENT_METHODS

    def bind(self, tool: RegisteredTool) -> RegisteredTool:
        """Take the timeout, name and repeat-safety from the registered tool's spec."""
        self.timeout = tool.spec.policy.start_to_close_timeout
        self.tool_name = tool.spec.name
        self.safe_to_repeat = tool.spec.safety.safe_to_repeat
        return tool

    def _url(self, arguments: Mapping[str, Any]) -> str:
        by_name = {p.name: p for p in self.parameters if p.location == "path"}

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

        return _PLACEHOLDER.sub(fill, self.url_template)

    def build_request(
        self, client: httpx.AsyncClient, arguments: Mapping[str, Any], ctx: ToolContext
    ) -> httpx.Request:
        """The request for these (validated) arguments, auth included."""
        url = self._url(arguments)
        query: list[tuple[str, str | int | float | bool | None]] = []
        headers: dict[str, str] = dict(self.headers)
        cookies: list[str] = []
        used = {p.argument for p in self.parameters}
        for param in self.parameters:
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
        if self.accept and not any(k.lower() == "accept" for k in headers):
            headers["Accept"] = self.accept
        content: bytes | None = None
        json_body: Any = None
        form: dict[str, Any] | None = None
        files: list[tuple[str, tuple[str | None, bytes, str | None]]] | None = None
        body: Any = None
        has_body = False
        if self.body_argument is not None and self.body_argument in arguments:
            body, has_body = arguments[self.body_argument], True
        elif self.body_from_rest:
            rest = {k: v for k, v in arguments.items() if k not in used}
            if rest or self.method.upper() in ("POST", "PUT", "PATCH"):
                body, has_body = rest, True
        if has_body:
            media = self.body_media_type
            if self.body_encoder is not None:
                encoded = self.body_encoder(body, ctx)
                content, files = encoded.content, encoded.files
                if encoded.content_type:
                    headers["Content-Type"] = encoded.content_type
            elif "json" in media:
                json_body = body
            elif media == "application/x-www-form-urlencoded" and isinstance(body, Mapping):
                form = {str(k): _simple(v) for k, v in body.items()}
            else:
                content = body.encode() if isinstance(body, str) else _text(body).encode()
                headers.setdefault("Content-Type", media)
        if (
            self.idempotency_header
            and ctx.idempotency_key
            and self.method.upper() not in _SAFE_METHODS
        ):
            headers.setdefault(self.idempotency_header, ctx.idempotency_key)
        # Auth last: whatever else was set, credentials come only from the worker.
        for auth in self.auth:
            for reserved in auth.reserved_query():
                query = [(k, v) for k, v in query if k != reserved]
            query.extend(auth.query(ctx).items())
            headers.update(auth.headers(ctx))
        return client.build_request(
            self.method.upper(),
            url,
            params=query or None,
            headers=headers,
            json=json_body,
            data=form,
            files=files,
            content=content,
            timeout=self.timeout,
        )

    async def handle(self, arguments: dict[str, Any], ctx: ToolContext) -> Any:
        """The tool's handler: send the request, return the result or raise a classified error."""
        client = self.client or shared_client(self.base_url)
        request = self.build_request(client, arguments, ctx)
        url = str(request.url.copy_with(query=None))
        if len(url) > _MAX_URL_IN_MESSAGE:  # arguments in the path can be long
            url = url[: _MAX_URL_IN_MESSAGE - 3] + "..."
        where = f"{request.method} {url}"
        secrets = [value for auth in self.auth for value in auth.secret_values(ctx)]
        try:
            response = await client.send(request)
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
            # Nothing reached the server: always safe to try again.
            raise ToolExecutionError(
                f"could not connect for {where}: {type(exc).__name__}",
                retryable=True,
                details={"exception_type": type(exc).__name__},
            ) from None
        except httpx.TimeoutException as exc:
            raise ToolTimeout(
                f"{where} got no answer within {self.timeout:g}s",
                retryable=bool(self.safe_to_repeat),
                details={"exception_type": type(exc).__name__},
            ) from None
        except httpx.TransportError as exc:
            # The request may have been processed: repeat it only if that is harmless.
            raise ToolExecutionError(
                f"network error during {where}: {type(exc).__name__}",
                retryable=bool(self.safe_to_repeat),
                details={"exception_type": type(exc).__name__},
            ) from None
        return self._read(response, where, secrets, ctx.artifact_store)

    def _read(
        self,
        response: httpx.Response,
        where: str,
        secrets: list[str],
        store: ArtifactStore | None = None,
    ) -> Any:
        status = response.status_code
        if 200 <= status < 300:
            return scrub_value(_success(response, store), secrets)
        details: dict[str, Any] = {"status_code": status, "request": where}
        # Scrubbed before the cut, so a cut cannot leave half a key that no longer matches.
        body = (
            _bounded(scrub(response.text, secrets), self.max_error_body) if response.content else ""
        )
        said = f": {body}" if body else ""
        if status == 429 or status >= 500:
            retry_after = parse_retry_after(response.headers.get("Retry-After"))
            wait = f" (Retry-After {retry_after:g}s)" if retry_after is not None else ""
            raise ToolExecutionError(
                f"{where} answered HTTP {status}{wait}; try again later{said}",
                retryable=True,
                retry_after=retry_after,
                details=details,
            )
        if status in (401, 403):
            for auth in self.auth:
                special = auth.on_unauthorized(status)
                if special is not None:
                    raise special
        if 300 <= status < 400:
            location = response.headers.get("Location")
            said = f"; it redirects to {scrub(location, secrets)}" if location else said
        raise ToolExecutionError(
            f"{where} answered HTTP {status} {response.reason_phrase}{said}",
            retryable=False,
            details=details,
        )


def _success(response: httpx.Response, store: ArtifactStore | None = None) -> Any:
    status = response.status_code
    if not response.content:
        return f"HTTP {status} {response.reason_phrase} (no content)"
    media = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
    if "json" in media:
        try:
            return response.json()
        except ValueError:
            return response.text
    if media.startswith("text/") or media in ("", "application/xml") or media.endswith("+xml"):
        return response.text
    try:
        return response.content.decode("utf-8")
    except UnicodeDecodeError:
        if store is not None:  # kept out of band: the model reads where it is
            ref = store.put(response.content, media or "application/octet-stream")
            note = (
                f"HTTP {status}: {ref.media_type} stored as artifact {ref.uri} ({ref.size} bytes)"
            )
            return ToolResult(
                content=[ContentBlock(type="text", text=note, artifact=ref)], artifacts=[ref]
            )
        return ToolResult(
            content=[
                ContentBlock(
                    type="text",
                    text=f"HTTP {status}: {len(response.content)} bytes of binary {media} content",
                )
            ]
        )


# ---------------------------------------------------------------- plain HTTP tool


def http_tool(
    registry: ToolRegistry,
    *,
    name: str,
    method: str,
    url_template: str,
    input_schema: Mapping[str, Any] | None = None,
    description: str = "",
    auth: HttpAuth | Sequence[HttpAuth] | None = None,
    headers: Mapping[str, str] | None = None,
    query: Sequence[str] | None = None,
    client: httpx.AsyncClient | None = None,
    idempotency_header: str | None = "Idempotency-Key",
    max_error_body: int = _DEFAULT_ERROR_BODY,
    **options: Any,
) -> RegisteredTool:
    """Register a tool that makes one HTTP request, for an endpoint without an OpenAPI document.

    Arguments map to the request like this: `{placeholders}` in `url_template` are path
    parameters (URL-encoded); names in `query` are query parameters; a `body` property is
    the request body. Without a `body` property, the other arguments are the query string
    for GET/HEAD/OPTIONS/DELETE and a JSON object body for POST/PUT/PATCH.

    Args:
        registry: Where to register the tool.
        name: The tool's name.
        method: The HTTP method.
        url_template: The full URL, e.g. `"https://api.example.com/items/{item_id}"`.
        input_schema: The arguments' JSON Schema; default: each placeholder a required string.
        description: What the model reads.
        auth: Worker-side credentials (`BearerSecret`, `HeaderSecret`, `QuerySecret`,
            `OAuthBearer`), never arguments.
        headers: Constant headers.
        query: Arguments sent as query parameters whatever the method.
        client: Your own `httpx.AsyncClient`; default: one shared per host.
        idempotency_header: Header carrying the call's idempotency key on non-GET methods.
        max_error_body: Characters of an error response quoted to the model.
        **options: Other `ToolOptions` (approval, timeouts, retry, safety overrides, ...).

    Raises:
        ToolRegistrationError: a placeholder is not in the schema, or the usual reasons.
    """
    upper = method.upper()
    placeholders = _PLACEHOLDER.findall(url_template)
    if input_schema is None:
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {p: {"type": "string"} for p in placeholders},
            "required": list(placeholders),
            "additionalProperties": False,
        }
    else:
        schema = dict(input_schema)
    properties = dict(schema.get("properties") or {})
    missing = [p for p in placeholders if p not in properties]
    if missing:
        raise ToolRegistrationError(
            f"tool {name!r}: url_template placeholders {missing} are not in the input schema",
            rule="schema",
            tool_name=name,
        )
    auths = as_auth_list(auth)
    reserved = set(AUTH_HEADER_NAMES)
    for a in auths:
        reserved |= a.reserved_headers() | a.reserved_query()
    clash = [p for p in properties if p.lower() in reserved]
    if clash:
        raise ToolRegistrationError(
            f"tool {name!r}: arguments {clash} would let the model set credentials; "
            "credentials come from auth=",
            rule="schema",
            tool_name=name,
        )
    query_names = set(query or ())
    has_body = "body" in properties
    body_methods = upper in ("POST", "PUT", "PATCH")
    params: list[HttpParameter] = [HttpParameter(p, "path", p) for p in placeholders]
    for prop in properties:
        if prop in placeholders or (prop == "body" and has_body):
            continue
        if prop in query_names or has_body or not body_methods:
            params.append(HttpParameter(prop, "query", prop))
    operation = HttpOperation(
        method=upper,
        url_template=url_template,
        parameters=tuple(params),
        body_argument="body" if has_body else None,
        body_from_rest=body_methods and not has_body,
        auth=auths,
        headers=dict(headers or {}),
        base_url=str(httpx.URL(url_template.split("{")[0]).copy_with(path="/", query=None)),
        client=client,
        idempotency_header=idempotency_header,
        max_error_body=max_error_body,
    )
    host = httpx.URL(url_template.split("{")[0]).host  # the host only: no userinfo, no query
    merged: dict[str, Any] = {
        **method_safety(upper),
        "transport": "http",
        "source": f"http:{host}",
        **options,
    }
    requirement = next((a.requirement() for a in auths if a.requirement() is not None), None)
    if requirement is not None:
        merged.setdefault("oauth", requirement)
    tool = registry.register_schema(
        operation.handle,
        input_schema=schema,
        name=name,
        description=description or f"{upper} {url_template}",
        **merged,
    )
    return operation.bind(tool)
