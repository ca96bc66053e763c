"""OpenAPI 3 (and Swagger 2.0) documents as tools: one tool per operation, run by `HttpOperation`.

Each operation's path, query, header and cookie parameters and its request body (under
`body`: JSON, form, text, or files for multipart and binary bodies) become one input
schema; the HTTP method says how safe the tool is. Credentials are worker-side
(`auth=`): auth headers and API-key parameters are never in a schema, so the model
cannot set them. An operation that cannot become a tool (an unsupported body, an
invalid schema, a `$ref` that does not resolve) is skipped with a warning naming it.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import httpx

from durable_tools.tools._names import ToolRegistrationError
from durable_tools.tools._registry import RegisteredTool, ToolRegistry
from durable_tools.tools._spec import OAuthRequirement

from ._http_auth import HttpAuth, OAuthBearer, as_auth_list
from ._http_operation import HttpOperation
from ._http_request import method_safety
from ._http_response import DEFAULT_ERROR_BODY
from ._openapi_load import load_openapi
from ._openapi_media import SkipOperation
from ._openapi_operation import Operation, build_operation, document_operations
from ._openapi_schema import OpenAPIError, RefResolver, refers_into_paths
from ._provider import fingerprint

__all__ = [
    "LoadedDocument",
    "PlannedOperation",
    "attach_openapi",
    "operation_tool_name",
    "plan_operations",
]

logger = logging.getLogger(__name__)

_MAX_DESCRIPTION = 1024


# ---------------------------------------------------------------------- servers


def _server_url(document: Mapping[str, Any], source: str | None) -> str:
    servers = document.get("servers") or [{"url": "/"}]
    server: Mapping[str, Any] = servers[0] if isinstance(servers[0], Mapping) else {"url": "/"}
    url = str(server.get("url") or "/")
    for name, variable in (server.get("variables") or {}).items():
        url = url.replace("{" + name + "}", str(variable.get("default", "")))
    if not re.match(r"^https?://", url):
        if source is None:
            raise OpenAPIError(
                f"the document's server URL {url!r} is relative and the document was not "
                "loaded from a URL: pass base_url="
            )
        url = urljoin(source, url)
    return url


# ------------------------------------------------------------------------ names


def operation_tool_name(
    operation_id: str | None, method: str, path: str, *, prefix: str | None = None, limit: int = 64
) -> str:
    """A snake_case tool name from an operationId (else `method_path`), at most `limit` long.

    `listPets` -> `list_pets`; no id, `GET /pets/{petId}` -> `get_pets_pet_id`.
    """
    raw = operation_id or f"{method}_{path}"
    # The name keeps at most `limit` characters of the conversion: converting more of a
    # remote document's id only costs time (the first regex is quadratic on a run of
    # capitals: 30,000 of them took 6 s). The digest below still covers all of it.
    text = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", raw[: limit * 8])
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", text)
    text = re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").lower()
    if prefix:
        clean = re.sub(r"[^A-Za-z0-9]+", "_", prefix).strip("_").lower()
        text = f"{clean}_{text}" if clean else text
    if not text or not text[0].isalpha():
        text = f"op_{text}".rstrip("_")
    if len(text) > limit or len(raw) > limit * 8:
        digest = hashlib.sha1(raw.encode()).hexdigest()[:8]
        text = f"{text[: limit - 9].rstrip('_')}_{digest}"
    return text


# ------------------------------------------------------------------- operations


def _selected(
    op: Operation, name: str, include: Collection[str] | None, exclude: Collection[str]
) -> bool:
    keys = {name, *op.tags} | ({op.operation_id} if op.operation_id else set())
    if include is not None and not keys & set(include):
        return False
    return not keys & set(exclude)


def _api_key_names(document: Mapping[str, Any]) -> set[tuple[str, str]]:
    """`(location, lower-case name)` of every apiKey security scheme."""
    schemes = ((document.get("components") or {}).get("securitySchemes")) or {}
    found = set()
    for scheme in schemes.values():
        if isinstance(scheme, Mapping) and scheme.get("type") == "apiKey":
            found.add((str(scheme.get("in", "")), str(scheme.get("name", "")).lower()))
    return found


def _oauth_scopes(document: Mapping[str, Any], op: Operation) -> tuple[str, ...]:
    schemes = ((document.get("components") or {}).get("securitySchemes")) or {}
    security = op.operation.get("security", document.get("security")) or []
    scopes: list[str] = []
    for requirement in security:
        for scheme_name, wanted in (requirement or {}).items():
            scheme = schemes.get(scheme_name) or {}
            if scheme.get("type") in ("oauth2", "openIdConnect"):
                scopes.extend(s for s in wanted or () if s not in scopes)
    return tuple(scopes)


def _description(op: Operation) -> str:
    parts = [str(op.operation.get(k)).strip() for k in ("summary", "description")]
    text = "\n\n".join(p for p in parts if p and p != "None")
    if not text:
        text = f"{op.method} {op.path}"
    if op.operation.get("deprecated"):
        text = f"(deprecated) {text}"
    if len(text) > _MAX_DESCRIPTION:
        text = text[: _MAX_DESCRIPTION - 3].rstrip() + "..."
    return text


@dataclass(frozen=True)
class LoadedDocument:
    """An OpenAPI document as `load_openapi` read it: the document (external references
    inlined), the URL it came from and the references that could not be inlined."""

    document: dict[str, Any]
    source: str | None
    unresolved: dict[str, str]

    def digest(self) -> str:
        """A digest of all of it, in its order: equal digests build equal tools, listed
        in the same order."""
        return fingerprint(self.document, self.source, self.unresolved, ordered=True)

    def context_digest(self) -> str:
        """A digest of what every operation's tool may depend on besides its own path
        item: all but `paths` (components, security schemes, servers), and `paths` too
        when any reference in the document (in `paths` or in a component) can reach them:
        one operation may then use another's parts."""
        rest = {k: v for k, v in self.document.items() if k != "paths"}
        paths = self.document.get("paths")
        shared = paths if refers_into_paths(self.document) else None
        return fingerprint(rest, shared, self.source, self.unresolved)


@dataclass(frozen=True)
class PlannedOperation:
    """One selected operation of a document, not yet built.

    Attributes:
        name: Its tool's name.
        key: A digest of everything its tool is built from (with the same options):
            an operation whose key did not change builds the same tool again.
        register: Builds its tool and registers it; None when the operation cannot
            become a tool (skipped with a warning naming it).
    """

    name: str
    key: str
    register: Callable[[], RegisteredTool | None]


def plan_operations(
    registry: ToolRegistry,
    loaded: LoadedDocument,
    *,
    base_url: str | None = None,
    prefix: str | None = None,
    include: Collection[str] | None = None,
    exclude: Collection[str] = (),
    auth: HttpAuth | Sequence[HttpAuth] | None = None,
    defaults: Mapping[str, Any] | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    headers: Mapping[str, str] | None = None,
    client: httpx.AsyncClient | None = None,
    idempotency_header: str | None = "Idempotency-Key",
    max_error_body: int = DEFAULT_ERROR_BODY,
) -> list[PlannedOperation]:
    """The operations of `loaded` that `attach_openapi` would register, in document
    order, each built only when asked (`PlannedOperation.register`): a re-read can keep
    the tools of the operations that did not change (`OpenApiProvider`).

    Takes `attach_openapi`'s options.

    Raises:
        OpenAPIError: no usable base URL, or `overrides` names an operation the document
            does not have.
    """
    parsed, source = loaded.document, loaded.source
    resolver = RefResolver(parsed, loaded.unresolved)
    root = (base_url or _server_url(parsed, source)).rstrip("/")
    auths = as_auth_list(auth)
    reserved_headers: set[str] = set()
    reserved_params: set[tuple[str, str]] = set(_api_key_names(parsed))
    for a in auths:
        reserved_headers |= a.reserved_headers()
        reserved_params |= {("query", q.lower()) for q in a.reserved_query()}
    reserved_headers |= {name for location, name in reserved_params if location == "header"}
    bearer = next((a for a in auths if isinstance(a, OAuthBearer)), None)
    limit = registry.max_name_length

    operations = list(document_operations(parsed, resolver))
    names: dict[int, str] = {}
    used: set[str] = set()
    for index, op in enumerate(operations):
        name = operation_tool_name(op.operation_id, op.method, op.path, prefix=prefix, limit=limit)
        candidate, n = name, 1
        while candidate in used:
            n += 1
            candidate = f"{name[: limit - len(str(n)) - 1]}_{n}"
        used.add(candidate)
        names[index] = candidate
    known = {op.operation_id for op in operations if op.operation_id} | set(names.values())
    unknown = set(overrides or {}) - known
    if unknown:
        raise OpenAPIError(
            f"overrides name operations the document does not have: {sorted(unknown)}"
        )

    def register(op: Operation, name: str) -> RegisteredTool | None:
        label = f"{op.operation_id or name} ({op.method} {op.path})"
        try:
            built = build_operation(
                op, resolver, reserved_headers=reserved_headers, reserved_params=reserved_params
            )
        except (SkipOperation, OpenAPIError) as why:
            logger.warning("OpenAPI operation %s skipped: %s", label, why)
            return None
        except (TypeError, AttributeError, KeyError, ValueError, RecursionError) as exc:
            # A malformed part of the document (a list where an object belongs, say).
            logger.warning("OpenAPI operation %s skipped: malformed (%s)", label, exc)
            return None
        operation = HttpOperation(
            method=op.method,
            url_template=root + op.path,
            parameters=built.parameters,
            body_argument=built.body_argument,
            body_media_type=built.media_type,
            body_encoder=built.encoder,
            accept=built.accept,
            auth=auths,
            headers=dict(headers or {}),
            base_url=root,
            client=client,
            idempotency_header=idempotency_header,
            max_error_body=max_error_body,
        )
        options: dict[str, Any] = {
            **method_safety(op.method),
            "description": _description(op),
            "tags": op.tags,
            "transport": "http",
            "source": f"openapi:{httpx.URL(root).host}",  # the host only: no userinfo, no query
        }
        if bearer is not None and bearer.provider is not None:
            scopes = tuple(dict.fromkeys([*bearer.scopes, *_oauth_scopes(parsed, op)]))
            options["oauth"] = OAuthRequirement(provider=bearer.provider, scopes=scopes)
        options.update(defaults or {})
        options["name"] = name
        for key in (op.operation_id, name):
            if key and overrides and key in overrides:
                options.update(overrides[key])
        try:
            tool = registry.register_schema(operation.handle, input_schema=built.schema, **options)
        except ToolRegistrationError as exc:
            if exc.rule not in ("schema", "example"):
                raise  # a duplicate name or bad options: the caller's to fix
            logger.warning("OpenAPI operation %s skipped: %s", label, exc)
            return None
        return operation.bind(tool)

    context = loaded.context_digest()
    planned: list[PlannedOperation] = []
    for index, op in enumerate(operations):
        name = names[index]
        if not _selected(op, name, include, exclude):
            continue
        key = fingerprint(context, root, name, op.method, op.path, op.path_item)
        planned.append(PlannedOperation(name, key, functools.partial(register, op, name)))
    return planned


def attach_openapi(
    registry: ToolRegistry,
    document: str | Path | Mapping[str, Any],
    *,
    base_url: str | None = None,
    prefix: str | None = None,
    include: Collection[str] | None = None,
    exclude: Collection[str] = (),
    auth: HttpAuth | Sequence[HttpAuth] | None = None,
    defaults: Mapping[str, Any] | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    headers: Mapping[str, str] | None = None,
    client: httpx.AsyncClient | None = None,
    idempotency_header: str | None = "Idempotency-Key",
    max_error_body: int = DEFAULT_ERROR_BODY,
    fetch_timeout: float = 30.0,
) -> list[RegisteredTool]:
    """Register one tool per operation of an OpenAPI 3 document.

    Args:
        registry: Where to register the tools.
        document: A file path, an http(s) URL, or the parsed document. JSON always;
            YAML when PyYAML is installed.
        base_url: Where requests go; default: the document's first server URL
            (relative ones resolve against the document's URL).
        prefix: Put before every tool name (`prefix_list_pets`).
        include: Only operations whose operationId, tool name or a tag is listed.
        exclude: Leave out operations whose operationId, tool name or a tag is listed.
        auth: Worker-side credentials: `BearerSecret`, `HeaderSecret`, `QuerySecret`,
            `OAuthBearer` (or a list of them). Their headers never appear in schemas.
        defaults: `ToolOptions` for every tool (e.g. `{"start_to_close_timeout": 20}`).
        overrides: `ToolOptions` per operationId or tool name, over the defaults
            (e.g. `{"deletePet": {"approval": True}}`).
        headers: Constant headers for every request (e.g. `User-Agent`).
        client: Your own `httpx.AsyncClient`; default: one shared per base URL.
        idempotency_header: Header carrying the call's idempotency key on methods other
            than GET/HEAD/OPTIONS; None to send none.
        max_error_body: Characters of an error response's body quoted to the model.
        fetch_timeout: Seconds to wait when `document` is a URL.

    Returns:
        The registered tools, in document order.

    Raises:
        OpenAPIError: the document cannot be read, has no usable base URL, or
            `overrides` names an operation the document does not have.
        ToolRegistrationError: a tool cannot be registered (a duplicate name, say).
    """
    parsed, source, unresolved = load_openapi(document, timeout=fetch_timeout)
    tools: list[RegisteredTool] = []
    for planned in plan_operations(
        registry,
        LoadedDocument(parsed, source, unresolved),
        base_url=base_url,
        prefix=prefix,
        include=include,
        exclude=exclude,
        auth=auth,
        defaults=defaults,
        overrides=overrides,
        headers=headers,
        client=client,
        idempotency_header=idempotency_header,
        max_error_body=max_error_body,
    ):
        tool = planned.register()
        if tool is not None:
            tools.append(tool)
    return tools
