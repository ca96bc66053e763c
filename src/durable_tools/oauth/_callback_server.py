"""The OAuth redirect endpoint: a small asyncio HTTP server, no web framework.

`GET /oauth/callback?code=..&state=..` completes the authorization the `state` stands for,
then calls `on_complete` (which typically signals the waiting run with the grant reference)
and shows a page saying the tab can be closed. A denial (`?error=access_denied`), an unknown
or used state, or a refused code gives a 400 page with the reason, and `on_error` is
called whenever the run the state belongs to is known. An expired state (a late click)
gives a 410 page naming the command that issues a fresh link
(`durable-tools auth reissue RUN CALL`); the run is not told, it keeps waiting by its
`AuthorizationPolicy`. `GET /healthz` answers `ok`.

If the run cannot be told (Temporal unreachable), nothing is lost: the grant is stored, the
outcome waits in the state store under its `state`, a background task retries, and a reload
of the link retries at once (see `_delivery`). A `HEAD` request never uses up a state (link
checkers and prefetchers send them). The provider's `error` and `error_description` are
cleaned (length-bounded, no control or invisible characters) before anyone sees them.

Nothing here logs a code, a state, a verifier or a token: request targets are never logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from http import HTTPStatus
from types import TracebackType
from urllib.parse import parse_qs, urlsplit

import httpx

from ._callback_pages import (
    NOT_TOLD,
    HttpResponse,
    expired_page,
    failure_page,
    granted_page,
    outcome_page,
    page,
)
from ._delivery import NotifyRetry, OnComplete, OnError, OutcomeDelivery
from ._errors import ExpiredState, InvalidState, OAuthConfigError, TokenEndpointError
from ._flow import OAuthManager
from ._records import AuthorizationFailure, PendingAuthorization
from ._sanitize import clean_description, clean_error_code

__all__ = [
    "CallbackApp",
    "CallbackServer",
    "HttpResponse",
    "make_callback_app",
    "serve_callback",
]

logger = logging.getLogger("durable_tools.oauth")

DEFAULT_CALLBACK_PATH = "/oauth/callback"


class CallbackApp:
    """The callback endpoint as an async function of (method, target): testable without
    sockets, served by `CallbackServer`.

    Args:
        manager: Completes authorizations.
        on_complete: Called with each `CompletedAuthorization`; sync or async.
        on_error: Called with an `AuthorizationFailure` when the run is known; sync or async.
        path: The callback path (the path of the providers' `redirect_uri`).
        retry: How long and how often to retry telling a run while the hooks fail.
    """

    def __init__(
        self,
        manager: OAuthManager,
        on_complete: OnComplete,
        on_error: OnError | None = None,
        *,
        path: str = DEFAULT_CALLBACK_PATH,
        retry: NotifyRetry | None = None,
    ) -> None:
        self.manager = manager
        self.path = path
        self.delivery = OutcomeDelivery(
            manager.states, on_complete, on_error, retry or NotifyRetry()
        )

    @property
    def on_complete(self) -> OnComplete:
        """Told of each grant."""
        return self.delivery.on_complete

    @on_complete.setter
    def on_complete(self, hook: OnComplete) -> None:
        self.delivery.on_complete = hook

    @property
    def on_error(self) -> OnError | None:
        """Told of each failure of a known run."""
        return self.delivery.on_error

    @on_error.setter
    def on_error(self, hook: OnError | None) -> None:
        self.delivery.on_error = hook

    async def resume(self) -> int:
        """Resume telling runs the outcomes a previous process could not deliver."""
        return await self.delivery.resume()

    async def aclose(self) -> None:
        """Stop the background retries (undelivered outcomes stay in the state store)."""
        await self.delivery.aclose()

    async def __call__(self, method: str, target: str) -> HttpResponse:
        url = urlsplit(target)
        if url.path == "/healthz":
            return HttpResponse(200, "ok\n", "text/plain; charset=utf-8")
        if url.path != self.path:
            return page(404, "Not found", "There is nothing here.")
        if method == "HEAD":
            # Link checkers and prefetchers: answer without using up the state.
            return page(200, "Authorization callback", "Open this link in a browser.")
        if method != "GET":
            return page(405, "Method not allowed", "The callback only answers GET.")
        query = {k: v[0] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        return await self.callback(query)

    async def callback(self, query: dict[str, str]) -> HttpResponse:
        """Handle the provider's redirect, given its query parameters."""
        state = query.get("state", "")
        if not state:
            return page(400, "Authorization failed", "The request has no state parameter.")
        try:
            pending = await self.manager.take_state(state)
        except InvalidState as err:
            if isinstance(err, ExpiredState) and err.pending is not None:
                return expired_page(err.pending)
            attempt = self.delivery.in_flight(state)
            if attempt is not None:  # a background retry holds the record: share its result
                record, done = attempt
                assert record.outcome is not None
                return outcome_page(record.outcome, await asyncio.shield(done))
            reason = "This authorization link is unknown or was already used."
            return page(400, "Authorization failed", f"{reason} Start it again from the run.")

        if pending.outcome is not None:
            # A reload after the run could not be told: the code was used, retry the telling.
            return outcome_page(pending.outcome, await self.delivery.redeliver(pending))

        error = query.get("error")
        if error:
            failure = self._failure(pending, error, query.get("error_description", ""))
            return failure_page(failure, await self.delivery.deliver(pending, failure))
        code = query.get("code", "")
        if not code:
            told = await self._fail(pending, "invalid_request", "the callback has no code")
            after = "" if told else f" {NOT_TOLD}"
            return page(400, "Authorization failed", f"The request has no code parameter.{after}")

        try:
            completed = await self.manager.exchange_code(pending, code)
        except TokenEndpointError as err:
            told = await self._fail(pending, err.error or "token_exchange_failed", str(err))
            after = "Start the authorization again from the run." if told else NOT_TOLD
            return page(
                400,
                "Authorization failed",
                f"{pending.provider} refused the authorization code "
                f"({clean_error_code(err.error or str(err.status))}). {after}",
            )
        except (httpx.HTTPError, OAuthConfigError) as err:
            logger.error("token exchange at %s failed: %s", pending.provider, type(err).__name__)
            await self._fail(pending, "token_exchange_failed", type(err).__name__)
            return page(
                502, "Authorization failed", f"Could not reach {pending.provider}'s token endpoint."
            )
        return granted_page(completed, await self.delivery.deliver(pending, completed))

    def _failure(
        self, pending: PendingAuthorization, error: str, description: str
    ) -> AuthorizationFailure:
        error, description = clean_error_code(error), clean_description(description)
        logger.info(
            "authorization of %s for %s/%s failed: %s",
            pending.provider,
            pending.workflow_id,
            pending.call_id,
            error,
        )
        return AuthorizationFailure(
            workflow_id=pending.workflow_id,
            call_id=pending.call_id,
            user=pending.user,
            provider=pending.provider,
            error=error,
            description=description,
            handler_prefix=pending.handler_prefix,
        )

    async def _fail(self, pending: PendingAuthorization, error: str, description: str) -> bool:
        """Tell the run of a failure (later, if not now); True if it was told now."""
        return await self.delivery.deliver(pending, self._failure(pending, error, description))


def make_callback_app(
    manager: OAuthManager,
    on_complete: OnComplete,
    on_error: OnError | None = None,
    *,
    path: str = DEFAULT_CALLBACK_PATH,
    retry: NotifyRetry | None = None,
) -> CallbackApp:
    """The callback endpoint, to serve with `CallbackServer` (or call directly in tests)."""
    return CallbackApp(manager, on_complete, on_error, path=path, retry=retry)


class CallbackServer:
    """Serves a `CallbackApp` over HTTP/1.1 on the running event loop.

    Each connection carries one request (`Connection: close`). Responses forbid caching
    and referrers, since the callback URL carries a code.

    Args:
        app: What answers requests.
        host: Keep it on loopback unless a proxy in front terminates TLS.
        port: 0 picks a free port (see `.port` after `start()`).
        request_timeout: Seconds a client has to send its request head.
    """

    def __init__(
        self,
        app: CallbackApp,
        host: str = "127.0.0.1",
        port: int = 8765,
        *,
        request_timeout: float = 10.0,
    ) -> None:
        self.app = app
        self.host = host
        self.port = port
        self.request_timeout = request_timeout
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        """The server's base URL."""
        return f"http://{self.host}:{self.port}"

    @property
    def callback_url(self) -> str:
        """The redirect URI to register at providers."""
        return self.url + self.app.path

    async def start(self) -> None:
        """Listen (returns once the socket is bound), and resume telling runs the outcomes
        a previous callback process could not deliver."""
        self._server = await asyncio.start_server(self._handle, self.host, self.port, limit=16384)
        self.port = int(self._server.sockets[0].getsockname()[1])
        await self.app.resume()

    async def stop(self) -> None:
        """Stop listening, wait for open requests to finish, and stop the background retries
        (an outcome not delivered yet stays in the state store for a reload of its link)."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
            await server.wait_closed()
        await self.app.aclose()

    async def serve_forever(self) -> None:
        """Serve until cancelled."""
        if self._server is None:
            await self.start()
        assert self._server is not None
        try:
            await self._server.serve_forever()
        finally:
            await self.stop()

    async def __aenter__(self) -> CallbackServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            try:
                head = await asyncio.wait_for(
                    reader.readuntil(b"\r\n\r\n"), timeout=self.request_timeout
                )
                method, target, _version = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
                return
            except ValueError:
                response = page(400, "Bad request", "Malformed request line.")
                method = "GET"
            else:
                try:
                    response = await self.app(method, target)
                except Exception:
                    logger.exception("the OAuth callback failed")
                    response = page(500, "Error", "The callback failed; see the worker's log.")
            await self._write(writer, response, head_only=method == "HEAD")
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    @staticmethod
    async def _write(writer: asyncio.StreamWriter, response: HttpResponse, head_only: bool) -> None:
        body = response.body.encode()
        phrase = HTTPStatus(response.status).phrase
        head = (
            f"HTTP/1.1 {response.status} {phrase}\r\n"
            f"Content-Type: {response.content_type}\r\n"
            f"Content-Length: {len(body)}\r\n"
            "Connection: close\r\n"
            "Cache-Control: no-store\r\n"
            "Referrer-Policy: no-referrer\r\n"
            "X-Content-Type-Options: nosniff\r\n"
            "\r\n"
        ).encode()
        writer.write(head if head_only else head + body)
        with contextlib.suppress(ConnectionError):
            await writer.drain()


async def serve_callback(
    manager: OAuthManager,
    on_complete: OnComplete,
    on_error: OnError | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    path: str = DEFAULT_CALLBACK_PATH,
    retry: NotifyRetry | None = None,
) -> CallbackServer:
    """Start serving the callback endpoint; stop it with `await server.stop()`."""
    server = CallbackServer(
        make_callback_app(manager, on_complete, on_error, path=path, retry=retry), host, port
    )
    await server.start()
    return server
