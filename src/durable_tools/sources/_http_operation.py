"""`HttpOperation`: how one HTTP tool builds its request, sends it and reads the answer.

The execution half shared by OpenAPI tools (`attach_openapi`) and plain HTTP tools
(`http_tool`); the request parts come from `_http_request`, credentials from
`_http_auth`, the result or classified error from `_http_response`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from durable_tools._http_clients import shared_client
from durable_tools.tools._context import ToolContext
from durable_tools.tools._registry import RegisteredTool

from ._http_auth import HttpAuth, apply_auth
from ._http_request import (
    IDEMPOTENT_METHODS,
    SAFE_METHODS,
    BodyEncoder,
    HttpParameter,
    RequestBody,
    encode_body,
    fill_url,
    parameter_parts,
)
from ._http_response import DEFAULT_ERROR_BODY, describe_request, read_response, send_request

__all__ = ["HttpOperation"]


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
    max_error_body: int = DEFAULT_ERROR_BODY
    """Characters of a failed response's body quoted in the error the model reads."""
    tool_name: str = ""

    safe_to_repeat: bool | None = None
    """Whether repeating the request after an unknown outcome is harmless; None: from
    the method. `bind` takes it from the tool's safety (which overrides may change)."""

    def __post_init__(self) -> None:
        if self.safe_to_repeat is None:
            self.safe_to_repeat = self.method.upper() in IDEMPOTENT_METHODS

    def describe_target(self) -> list[Any]:
        """What the request goes to and how it is built (no credentials): a changed one
        means a changed tool when its source is read again."""
        return [
            self.method,
            self.url_template,
            [repr(p) for p in self.parameters],
            self.body_argument,
            self.body_from_rest,
            self.body_media_type,
            self.accept,
            sorted(self.headers),  # names only: values may be secrets
        ]

    def bind(self, tool: RegisteredTool) -> RegisteredTool:
        """Take the timeout, name and repeat-safety from the registered tool's spec."""
        self.timeout = tool.spec.policy.start_to_close_timeout
        self.tool_name = tool.spec.name
        self.safe_to_repeat = tool.spec.safety.safe_to_repeat
        return tool

    def _body(
        self, arguments: Mapping[str, Any], ctx: ToolContext, headers: dict[str, str]
    ) -> RequestBody:
        if self.body_argument is not None and self.body_argument in arguments:
            body = arguments[self.body_argument]
        elif self.body_from_rest:
            used = {p.argument for p in self.parameters}
            body = {k: v for k, v in arguments.items() if k not in used}
            if not body and self.method.upper() not in ("POST", "PUT", "PATCH"):
                return RequestBody()
        else:
            return RequestBody()
        return encode_body(body, self.body_media_type, self.body_encoder, ctx, headers)

    def build_request(
        self, client: httpx.AsyncClient, arguments: Mapping[str, Any], ctx: ToolContext
    ) -> httpx.Request:
        """The request for these (validated) arguments, auth included."""
        url = fill_url(self.url_template, self.parameters, arguments)
        headers: dict[str, str] = dict(self.headers)
        query = parameter_parts(self.parameters, arguments, headers)
        if self.accept and not any(k.lower() == "accept" for k in headers):
            headers["Accept"] = self.accept
        body = self._body(arguments, ctx, headers)
        if (
            self.idempotency_header
            and ctx.idempotency_key
            and self.method.upper() not in SAFE_METHODS
        ):
            headers.setdefault(self.idempotency_header, ctx.idempotency_key)
        query = apply_auth(self.auth, ctx, query, headers)
        return client.build_request(
            self.method.upper(),
            url,
            params=query or None,
            headers=headers,
            json=body.json,
            data=body.form,
            files=body.files,
            content=body.content,
            timeout=self.timeout,
        )

    async def handle(self, arguments: dict[str, Any], ctx: ToolContext) -> Any:
        """The tool's handler: send the request, return the result or raise a classified error."""
        client = self.client or shared_client(self.base_url)
        request = self.build_request(client, arguments, ctx)
        where = describe_request(request)
        secrets = [value for auth in self.auth for value in auth.secret_values(ctx)]
        response = await send_request(
            client,
            request,
            where=where,
            timeout=self.timeout,
            safe_to_repeat=bool(self.safe_to_repeat),
        )
        return read_response(
            response,
            where=where,
            secrets=secrets,
            auth=self.auth,
            max_error_body=self.max_error_body,
            store=ctx.artifact_store,
        )
