"""How the inbox answers what went wrong: JSON under `/api/`, plain text (or the login
redirect) for pages."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from temporalio.client import WorkflowQueryFailedError
from temporalio.service import RPCError

from durable_tools._callers._tokens import TokenFileError
from durable_tools._encrypted import PayloadsEncrypted

from ._pending import PageRequestError

__all__ = ["NotAuthenticated", "error_handlers"]

Handler = Callable[[Request, Exception], Awaitable[Response]]

logger = logging.getLogger(__name__)


class NotAuthenticated(Exception):
    """Nobody authenticated asked for something that needs a user."""


def error_handlers(max_body_bytes: int) -> dict[Any, Handler]:
    """The app's exception handlers (`max_body_bytes` to name the limit in a 413)."""

    async def not_authenticated(request: Request, exc: Exception) -> Response:
        if request.url.path.startswith("/api/"):
            return JSONResponse(
                {"error": "authentication required"},
                401,
                headers={"WWW-Authenticate": "Bearer"},
            )
        if request.method == "GET":
            back = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            return RedirectResponse(f"/login?next={quote(back, safe='')}", 303)
        return Response("authentication required\n", 401, media_type="text/plain")

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        detail = exc.detail
        if exc.status_code == 413:  # Starlette's body limit
            detail = f"request body over {max_body_bytes} bytes"
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": detail}, exc.status_code)
        return Response(f"{detail}\n", exc.status_code, media_type="text/plain")

    async def bad_page_request(request: Request, exc: Exception) -> Response:
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": str(exc)}, 400)
        return Response(f"{exc}\n", 400, media_type="text/plain")

    async def run_unreadable(request: Request, exc: Exception) -> Response:
        # A run that does not exist (404), or whose worker does not answer in time (503).
        status, message = 503, "the run did not answer in time (is a worker running?)"
        if isinstance(exc, RPCError | WorkflowQueryFailedError):
            status, message = 404, f"the run could not be read: {exc}"
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": message}, status)
        return Response(f"{message}\n", status, media_type="text/plain")

    async def encrypted(request: Request, exc: Exception) -> Response:
        message = f"this inbox cannot read the run: {exc}"
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": message}, 503)
        return Response(f"{message}\n", 503, media_type="text/plain")

    async def tokens_unusable(request: Request, exc: Exception) -> Response:
        # Fail closed, and say so; the details (the file, the users) go to the operator's
        # log, not to whoever asked.
        logger.error("the inbox refuses every request: %s", exc)
        message = (
            "the inbox's tokens file cannot be used (changed by hand?): nobody is let in "
            "until its operator fixes it; the server's log says what is wrong"
        )
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": message}, 503)
        return Response(f"{message}\n", 503, media_type="text/plain")

    return {
        TokenFileError: tokens_unusable,
        PayloadsEncrypted: encrypted,
        NotAuthenticated: not_authenticated,
        HTTPException: http_error,
        PageRequestError: bad_page_request,
        RPCError: run_unreadable,
        WorkflowQueryFailedError: run_unreadable,
        TimeoutError: run_unreadable,
    }
