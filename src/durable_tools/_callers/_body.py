"""Bounded request bodies for the inbox and the codec server.

Starlette's `RequestBodyLimitMiddleware` refuses a body with 413 as soon as its declared
`Content-Length`, or the bytes streamed so far (chunked bodies too), pass the limit: the
body is never buffered beyond it. `RefuseAndClose` then ends the connection after the 413,
so the server does not go on reading (and discarding) the rest of a huge body as uvicorn
otherwise would to keep the connection alive. Before closing it reads a little more
(bounded in bytes and time), so that a client that sent a body only somewhat too large has
finished sending and reads the 413 instead of a connection reset; a body declared larger
than that is not read at all (a client that sends `Expect: 100-continue`, as curl does for
large bodies, gets the 413 before sending any of it).
"""

from __future__ import annotations

import asyncio

from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.middleware.body_limit import RequestBodyLimitMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["RefuseAndClose", "body_limit"]

_LINGER_BYTES = 1024 * 1024
_LINGER_SECONDS = 1.0


class RefuseAndClose:
    """Closes the connection after a 413, once at most `linger_bytes` more of the body
    (or `linger_seconds`) went by.

    Args:
        app: The app (with the body limit inside).
        linger_bytes: Bytes of the refused body read and dropped before closing.
        linger_seconds: Time spent on that at most.
    """

    def __init__(
        self,
        app: ASGIApp,
        linger_bytes: int = _LINGER_BYTES,
        linger_seconds: float = _LINGER_SECONDS,
    ) -> None:
        self.app = app
        self.linger_bytes = linger_bytes
        self.linger_seconds = linger_seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length", "")
        body_done = False
        refused = False
        received = 0

        async def watched_receive() -> Message:
            nonlocal body_done, received
            message = await receive()
            received += len(message.get("body", b""))
            if message["type"] != "http.request" or not message.get("more_body", False):
                body_done = True
            return message

        async def closing_send(message: Message) -> None:
            nonlocal refused
            if message["type"] == "http.response.start" and message["status"] == 413:
                refused = True
                message["headers"] = [
                    *[(k, v) for k, v in message.get("headers", []) if k.lower() != b"connection"],
                    (b"connection", b"close"),
                ]
            last = message["type"] == "http.response.body" and not message.get("more_body")
            left = int(declared) - received if declared.isdigit() else 0
            if refused and last and not body_done and left <= self.linger_bytes:
                await self._drain(receive)
            await send(message)

        await self.app(scope, watched_receive, closing_send)

    async def _drain(self, receive: Receive) -> None:
        dropped = 0
        try:
            async with asyncio.timeout(self.linger_seconds):
                while dropped <= self.linger_bytes:
                    message = await receive()
                    if message["type"] != "http.request":
                        return
                    dropped += len(message.get("body", b""))
                    if not message.get("more_body", False):
                        return
        except TimeoutError:
            return


def body_limit(max_bytes: int) -> list[Middleware]:
    """The middleware that bound request bodies to `max_bytes` (put them first)."""
    if max_bytes < 0:
        raise ValueError("the request body limit must not be negative")
    return [
        Middleware(RefuseAndClose, linger_bytes=max(_LINGER_BYTES, max_bytes)),
        Middleware(RequestBodyLimitMiddleware, max_body_size=max_bytes),
    ]
