"""The Temporal codec server: `POST /encode` and `POST /decode` for the Web UI and CLI.

Protocol: the body is proto3 JSON of `temporal.api.common.v1.Payloads`
(`{"payloads": [{"metadata": {"encoding": "<base64>"}, "data": "<base64>"}]}`) and the
answer has the same shape. The UI sends `X-Namespace` and, when told to, an
`Authorization: Bearer` header or its cookies; every route is also served under a
namespace prefix (`/{namespace}/decode`), as the CLI's `--codec-endpoint` templating uses.

Nobody unauthenticated gets a payload decoded: a Bearer token from the inbox's tokens
file, the inbox's login session (same session secret, same host), or a trusted proxy's
user header. Needs the `inbox` extra.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from google.protobuf import json_format
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.middleware.sessions import SessionMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from temporalio.api.common.v1 import Payload, Payloads
from temporalio.converter import PayloadCodec

from durable_tools.inbox import AuthConfig, authenticate

from ._codec import CodecError

__all__ = ["INBOX_SESSION_COOKIE", "MAX_BODY_BYTES", "CodecServerConfig", "create_codec_app"]

MAX_BODY_BYTES = 16 * 1024 * 1024
"""Largest request body: a batch of payloads (each at most 2 MB on the server)."""
INBOX_SESSION_COOKIE = "durable_tools_inbox"
"""The inbox's session cookie: given the inbox's session secret, its login counts here."""


@dataclass(frozen=True)
class CodecServerConfig:
    """Who may use the codec server, and from where.

    Args:
        auth: Tokens file users (Bearer), trusted proxies; as for the inbox.
        ui_origins: Browser origins allowed to call (the Temporal Web UI's, e.g.
            `http://127.0.0.1:8233`); CORS with credentials.
        session_secret: The inbox's session secret, to accept its login cookie; empty
            accepts none.
        groups: If given, only users in one of these groups are served.
        namespaces: If given, only requests for these namespaces (`X-Namespace` or the
            path prefix) are served.
    """

    auth: AuthConfig
    ui_origins: Sequence[str] = ()
    session_secret: str = ""
    groups: Sequence[str] = field(default=())
    namespaces: Sequence[str] = field(default=())


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def create_codec_app(codec: PayloadCodec, config: CodecServerConfig) -> Starlette:
    """The codec server app: `/encode`, `/decode` (and `/{namespace}/...`), `/health`."""

    def endpoint(
        convert: Callable[[Sequence[Payload]], Awaitable[list[Payload]]],
    ) -> Callable[[Request], Awaitable[Response]]:
        async def handle(request: Request) -> Response:
            user = authenticate(request, config.auth)
            if user is None:
                return _error(401, "authentication required (Bearer token or inbox login)")
            if config.groups and not set(user.groups) & set(config.groups):
                return _error(403, f"user {user.name!r} is not in an allowed group")
            namespace = request.path_params.get("namespace") or request.headers.get(
                "x-namespace", ""
            )
            if config.namespaces and namespace not in config.namespaces:
                return _error(403, f"namespace {namespace!r} is not served here")
            body = await _read_body(request)
            if body is None:
                return _error(413, f"request body over {MAX_BODY_BYTES} bytes")
            try:
                payloads = json_format.Parse(body, Payloads())
            except (json_format.ParseError, UnicodeDecodeError) as error:
                return _error(400, f"expected proto3 JSON of Payloads: {error}")
            try:
                converted = await convert(list(payloads.payloads))
            except CodecError as error:
                return _error(422, str(error))
            text = json_format.MessageToJson(Payloads(payloads=converted))
            return Response(text, media_type="application/json")

        return handle

    async def health(request: Request) -> Response:
        return JSONResponse({"ok": True})

    encode, decode = endpoint(codec.encode), endpoint(codec.decode)
    routes = [
        Route("/encode", encode, methods=["POST"]),
        Route("/decode", decode, methods=["POST"]),
        Route("/{namespace}/encode", encode, methods=["POST"]),
        Route("/{namespace}/decode", decode, methods=["POST"]),
        Route("/health", health, methods=["GET"]),
    ]
    middleware = [
        # Outermost, so that refusals (401, 403) carry CORS headers the UI can read.
        Middleware(
            CORSMiddleware,
            allow_origins=list(config.ui_origins),
            allow_methods=["POST"],
            allow_headers=["Authorization", "Content-Type", "X-Namespace"],
            allow_credentials=True,
            max_age=600,
        ),
        Middleware(
            SessionMiddleware,
            # Without the inbox's secret no cookie verifies, so no session is accepted.
            secret_key=config.session_secret or secrets.token_urlsafe(32),
            session_cookie=INBOX_SESSION_COOKIE,
            same_site="strict",
        ),
    ]
    return Starlette(routes=routes, middleware=middleware)


async def _read_body(request: Request) -> bytes | None:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return None
        chunks.append(chunk)
    return b"".join(chunks)
