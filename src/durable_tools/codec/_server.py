"""The Temporal codec server: `POST /encode` and `POST /decode` for the Web UI and CLI.

Protocol: the body is proto3 JSON of `temporal.api.common.v1.Payloads`
(`{"payloads": [{"metadata": {"encoding": "<base64>"}, "data": "<base64>"}]}`) and the
answer has the same shape. The UI sends `X-Namespace` and, when told to, an
`Authorization: Bearer` header or its cookies; every route is also served under a
namespace prefix (`/{namespace}/decode`), as the CLI's `--codec-endpoint` templating uses.

Nobody unauthenticated gets a payload decoded: a Bearer token from the inbox's tokens
file, the inbox's login session (same session secret, same host; not one ended by a
logout), or a trusted proxy's user header. Needs the `inbox` extra.

Bounded: a request body over `MAX_BODY_BYTES` is refused (413) before it is read, request
bodies are never decompressed (a `Content-Encoding` other than identity is refused, 415),
and the payloads of one request may inflate to `MAX_DECODED_BYTES` in all.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from google.protobuf import json_format
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.middleware.sessions import SessionMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from temporalio.api.common.v1 import Payload, Payloads
from temporalio.converter import PayloadCodec

from durable_tools._callers._auth import AuthConfig, authenticate
from durable_tools._callers._body import body_limit

from ._codec import CodecError, EncryptionCodec, MalformedPayloadError, PayloadTooLargeError

__all__ = [
    "INBOX_SESSION_COOKIE",
    "MAX_BODY_BYTES",
    "MAX_DECODED_BYTES",
    "MAX_JSON_ITEMS",
    "CodecServerConfig",
    "create_codec_app",
]

MAX_BODY_BYTES = 16 * 1024 * 1024
"""Largest request body: a batch of payloads (each at most 2 MB on the server)."""
MAX_JSON_ITEMS = 65_536
"""Most JSON structure one request may hold (objects, arrays, members, elements): a 16 MB
body of empty payloads would otherwise parse into millions of objects (about 1 GB)."""
MAX_DECODED_BYTES = 64 * 1024 * 1024
"""Largest total size of the payloads one `/decode` answers with (compressed payloads
inflate: without a bound, a 600 KB request can ask for gigabytes)."""
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
        max_body_bytes: Larger request bodies are refused (413) before they are read.
        max_decoded_bytes: A `/decode` whose payloads inflate to more in all is refused
            (422).
        max_json_items: A body with more JSON structure (objects, arrays, members,
            elements) is refused (413) before it is parsed.
    """

    auth: AuthConfig
    ui_origins: Sequence[str] = ()
    session_secret: str = ""
    groups: Sequence[str] = field(default=())
    namespaces: Sequence[str] = field(default=())
    max_body_bytes: int = MAX_BODY_BYTES
    max_decoded_bytes: int = MAX_DECODED_BYTES
    max_json_items: int = MAX_JSON_ITEMS


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


async def _decode_within(
    codec: PayloadCodec, payloads: Sequence[Payload], budget: int
) -> list[Payload]:
    """Decode one payload at a time, refusing once the answers pass `budget` bytes."""
    too_much = PayloadTooLargeError(
        f"the payloads of this request decode to more than {budget} bytes; ask for fewer at once"
    )
    decoded: list[Payload] = []
    for payload in payloads:
        if isinstance(codec, EncryptionCodec):
            # The budget left also bounds how far this payload may inflate.
            own_bound = codec.max_decompressed_bytes
            try:
                plain = codec.decrypt(payload, max_bytes=max(budget, 0))
            except PayloadTooLargeError:
                if budget < own_bound:  # the request's budget was the bound that held
                    raise too_much from None
                raise
        else:
            [plain] = await codec.decode([payload])
        budget -= plain.ByteSize()
        if budget < 0:
            raise too_much
        decoded.append(plain)
    return decoded


def create_codec_app(codec: PayloadCodec, config: CodecServerConfig) -> Starlette:
    """The codec server app: `/encode`, `/decode` (and `/{namespace}/...`), `/health`.

    Serve it with forwarding headers off (`InboxServer` does; `uvicorn --no-proxy-headers`
    otherwise): a trusted proxy is recognised by its socket address only.
    """

    async def decode(payloads: Sequence[Payload]) -> list[Payload]:
        return await _decode_within(codec, payloads, config.max_decoded_bytes)

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
            encoding = request.headers.get("content-encoding", "identity").strip().lower()
            if encoding != "identity":
                return _error(415, f"request bodies are not decompressed ({encoding!r} sent)")
            # Read under the body limit: past it, a 413 and the rest is not read.
            body = await request.body()
            # Counted before parsing: base64 strings hold none of these characters, so
            # this counts the JSON's structure, which is what parsing turns into objects.
            if sum(body.count(c) for c in (b"{", b"[", b":", b",")) > config.max_json_items:
                return _error(413, f"request holds more than {config.max_json_items} JSON items")
            try:
                payloads = json_format.Parse(body, Payloads())
            except (json_format.ParseError, UnicodeDecodeError, RecursionError) as error:
                return _error(400, f"expected proto3 JSON of Payloads: {error}")
            try:
                converted = await convert(list(payloads.payloads))
            except MalformedPayloadError as error:
                return _error(400, str(error))
            except CodecError as error:
                return _error(422, str(error))
            text = json_format.MessageToJson(Payloads(payloads=converted))
            return Response(text, media_type="application/json")

        return handle

    async def http_error(request: Request, exc: Exception) -> Response:
        # Starlette's own refusals (the body limit's 413 among them) in this API's shape.
        assert isinstance(exc, HTTPException)
        if exc.status_code == 413:
            return _error(413, f"request body over {config.max_body_bytes} bytes")
        return _error(exc.status_code, str(exc.detail))

    async def health(request: Request) -> Response:
        return JSONResponse({"ok": True})

    encoding, decoding = endpoint(codec.encode), endpoint(decode)
    routes = [
        Route("/encode", encoding, methods=["POST"]),
        Route("/decode", decoding, methods=["POST"]),
        Route("/{namespace}/encode", encoding, methods=["POST"]),
        Route("/{namespace}/decode", decoding, methods=["POST"]),
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
        # Refused with 413 (CORS headers on, so the UI can read it) once Content-Length, or
        # the bytes streamed so far, pass the limit; nothing buffers the body before.
        *body_limit(config.max_body_bytes),
        Middleware(
            SessionMiddleware,
            # Without the inbox's secret no cookie verifies, so no session is accepted.
            secret_key=config.session_secret or secrets.token_urlsafe(32),
            session_cookie=INBOX_SESSION_COOKIE,
            same_site="strict",
        ),
    ]
    return Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers={HTTPException: http_error},
    )
