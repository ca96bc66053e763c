"""HTTP tools: one request per call, with worker-side auth and classified failures.

`http_tool` registers a plain HTTP endpoint as a tool. The parts it is built from live
in their own modules, and callers import them from there: `_http_auth` (worker-side
credentials), `_http_request` (arguments to request parts), `_http_response` (sending,
results and classified errors) and `_http_operation` (`HttpOperation`, the execution
half shared with OpenAPI tools).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from durable_tools.tools._names import ToolRegistrationError
from durable_tools.tools._registry import RegisteredTool, ToolRegistry

from ._http_auth import (
    AUTH_HEADER_NAMES,
    HttpAuth,
    as_auth_list,
)
from ._http_operation import HttpOperation
from ._http_request import (
    PLACEHOLDER,
    HttpParameter,
    method_safety,
)
from ._http_response import DEFAULT_ERROR_BODY

__all__ = ["http_tool"]


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
    max_error_body: int = DEFAULT_ERROR_BODY,
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
    placeholders = PLACEHOLDER.findall(url_template)
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
