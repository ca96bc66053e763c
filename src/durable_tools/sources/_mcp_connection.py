"""One live MCP session, owned by one background task (see `_mcp_pool` for the pool).

The MCP SDK's transports and `ClientSession` are async context managers whose task
groups must be entered and left by one task. So each session lives in a background
task of its own (`_Connection._own`) that enters the transport and the session, and
leaves them when asked to close or when the transport dies. Calls come from any task
(each activity runs in its own): they send requests on the shared session and race
the answer against the connection's end, so a dead server fails a call at once
instead of leaving it waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from typing import Any, TextIO

from durable_tools._extras import MissingExtraError, install_hint
from durable_tools.tools import NeedsAuthorization, ToolError, ToolExecutionError

from ._mcp_servers import McpServer, McpStdio, resolve_value

# The MCP SDK is the optional `mcp` extra: without it this package still imports (its
# other sources work) and using an MCP server says what to install.
try:
    import anyio
    import httpx2
    import mcp_types
    from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
    from mcp.client._probe import negotiate_auto
    from mcp.client.session import ClientRequestContext
    from mcp.client.streamable_http import streamable_http_client
except ImportError as _error:  # pragma: no cover - exercised only without the extra
    _MISSING_SDK: ImportError | None = _error
else:
    _MISSING_SDK = None

__all__ = ["McpConnectionError", "require_mcp_sdk"]

logger = logging.getLogger("durable_tools.sources.mcp")

_CLIENT_NAME = "durable-tools"
_CLOSE_GRACE = 5.0
"""Seconds a closing session gets to shut its transport down (stop the subprocess)."""
_CANCEL_GRACE = 2.0
"""Seconds an abandoned call gets to send MCP's `notifications/cancelled`."""


def require_mcp_sdk() -> None:
    """Raise a helpful ImportError (`MissingExtraError`) when the `mcp` extra is not
    installed."""
    if _MISSING_SDK is not None:
        raise MissingExtraError(
            f"MCP tool sources need the MCP SDK: {install_hint('mcp')} ({_MISSING_SDK})"
        ) from _MISSING_SDK


def _transport_errors() -> tuple[type[BaseException], ...]:
    # Errors that say the connection (not the tool) failed: worth one reconnect.
    return (
        OSError,
        EOFError,
        httpx2.TransportError,
        anyio.BrokenResourceError,
        anyio.ClosedResourceError,
        anyio.EndOfStream,
    )


class McpConnectionError(ToolExecutionError):
    """The MCP server could not be reached or dropped the connection. Retryable."""

    def __init__(self, message: str, *, server: str) -> None:
        super().__init__(message, retryable=True, details={"mcp_server": server})


class _ConnectionLost(Exception):
    """The session ended while a call waited on it."""


def _is_connection_failure(exc: BaseException) -> bool:
    if isinstance(exc, _ConnectionLost | McpConnectionError):
        return True
    if isinstance(exc, MCPError):
        if exc.code == mcp_types.CONNECTION_CLOSED:
            return True
        # Streamable HTTP: the server answered 404 to our session id, i.e. it restarted
        # and forgot the session ("Session not found" from the server, or the client's own
        # "Session terminated"). The request was never run.
        return exc.code == mcp_types.INVALID_REQUEST and "session" in exc.message.lower()
    if isinstance(exc, BaseExceptionGroup):
        return all(_is_connection_failure(e) for e in exc.exceptions)
    return isinstance(exc, _transport_errors())


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _describe(exc.exceptions[0])
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if str(exc) else text


class _Connection:
    """One live session, owned by one background task."""

    def __init__(
        self,
        server: McpServer,
        secrets: Mapping[str, str],
        on_tools_changed: Callable[[], None] | None = None,
        bearer: str | None = None,
    ) -> None:
        self.server = server
        self._secrets = dict(secrets)
        self._on_tools_changed = on_tools_changed
        self._bearer = bearer
        self.unauthorized = False
        """The HTTP server answered 401: the credential is missing, expired or revoked."""
        self.session: ClientSession | None = None
        self.closed = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.error: BaseException | None = None

    @property
    def alive(self) -> bool:
        return self.session is not None and not self.closed.is_set()

    async def open(self, timeout: float) -> None:
        """Start the owner task and wait until the session is initialized.

        Raises:
            McpConnectionError: the server could not be started, reached or initialized.
        """
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._own(ready), name=f"mcp:{self.server.label}")
        try:
            await asyncio.wait_for(asyncio.shield(ready), timeout)
        except TimeoutError:
            ready.cancel()
            await self.close()
            raise McpConnectionError(
                f"MCP server {self.server.label!r} did not finish connecting within {timeout:g}s",
                server=self.server.label,
            ) from None
        except BaseException:
            await self.close()
            raise

    async def _own(self, ready: asyncio.Future[None]) -> None:
        try:
            async with AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport(stack))
                session = await stack.enter_async_context(
                    ClientSession(
                        read,
                        write,
                        client_info=mcp_types.Implementation(name=_CLIENT_NAME, version="0.1.0"),
                        message_handler=self._notified,
                        # Announces the capability; see `_refuse_open_elicitation`.
                        elicitation_callback=(
                            _refuse_open_elicitation if self.server.elicitation else None
                        ),
                    )
                )
                if self.server.elicitation:
                    # The SDK's own `mode="auto"` policy: the 2026-07-28 protocol when the
                    # server speaks it (questions come back as input-required results),
                    # else the initialize handshake.
                    await negotiate_auto(session)
                else:
                    await session.initialize()
                self.session = session
                if not ready.done():
                    ready.set_result(None)
                await self._stop.wait()
        except BaseException as exc:  # the owner ends quietly; callers see `closed`
            self.error = exc
            if not self._stop.is_set():
                logger.info("MCP session to %s ended: %s", self.server.label, _describe(exc))
            if not ready.done():
                ready.set_exception(self._open_error(exc))
        finally:
            self.closed.set()

    async def _notified(self, message: Any) -> None:
        # Runs in the session's receive loop: it must not wait on the session itself (the
        # answer could never be read), so the pool refreshes in a task of its own.
        if isinstance(message, mcp_types.ToolListChangedNotification) and self._on_tools_changed:
            self._on_tools_changed()

    def _open_error(self, exc: BaseException) -> ToolError:
        if isinstance(exc, LookupError):  # a missing secret: no retry can fix that
            return ToolExecutionError(str(exc), retryable=False)
        if self.unauthorized:
            return self.unauthorized_error()
        return McpConnectionError(
            f"cannot connect to MCP server {self.server.label!r}: {_describe(exc)}",
            server=self.server.label,
        )

    def unauthorized_error(self) -> ToolError:
        """The error for a 401: a new user grant pauses the run; a worker credential cannot."""
        label = self.server.label
        if self._bearer is not None:
            return NeedsAuthorization(
                f"MCP server {label!r} rejected the user's OAuth token (HTTP 401); "
                "it needs a new grant"
            )
        return ToolExecutionError(
            f"MCP server {label!r} refused the worker's credentials (HTTP 401): give it a "
            "valid token (McpHttp headers=..., FromSecret) or call it with a user's grant "
            "(oauth=OAuthRequirement(...))",
            retryable=False,
        )

    async def _saw_response(self, response: Any) -> None:
        # The SDK turns an HTTP 401 into a generic JSON-RPC error: note it here.
        if response.status_code == 401:
            self.unauthorized = True

    def _transport(self, stack: AsyncExitStack) -> contextlib.AbstractAsyncContextManager[Any]:
        server = self.server
        if isinstance(server, McpStdio):
            env = {
                key: resolve_value(value, self._secrets, what=f"env {key} of {server.label}")
                for key, value in server.env.items()
            }
            params = StdioServerParameters(
                command=server.command, args=list(server.args), env=env or None, cwd=server.cwd
            )
            return stdio_client(params, errlog=_server_errlog())
        headers = {
            key: resolve_value(value, self._secrets, what=f"header {key} of {server.label}")
            for key, value in server.headers.items()
            # The user's token replaces the worker's own (whose secret it may then lack).
            if self._bearer is None or key.lower() != "authorization"
        }
        if self._bearer is not None:
            headers["Authorization"] = f"Bearer {self._bearer}"
        client = httpx2.AsyncClient(
            headers=headers,
            timeout=httpx2.Timeout(server.timeout, read=300.0),
            event_hooks={"response": [self._saw_response]},
        )
        stack.push_async_callback(client.aclose)
        return streamable_http_client(server.url, http_client=client)

    async def close(self) -> None:
        """Leave the session and the transport (stops a stdio subprocess)."""
        self._stop.set()
        task = self._task
        if task is None or task.done():
            self.closed.set()
            return
        done, _ = await asyncio.wait({task}, timeout=_CLOSE_GRACE)
        if not done:
            task.cancel()
            await asyncio.wait({task}, timeout=_CLOSE_GRACE)

    async def request(self, call: Any) -> Any:
        """Run `call(session)` on this session, failing fast if the session ends.

        Raises:
            _ConnectionLost: the session ended before the answer came.
        """
        session = self.session
        if session is None or self.closed.is_set():
            raise _ConnectionLost(f"the session to {self.server.label} is closed")
        work = asyncio.ensure_future(call(session))
        ended = asyncio.ensure_future(self.closed.wait())
        try:
            done, _ = await asyncio.wait({work, ended}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ended.cancel()
            if not work.done():
                # Cancelled (the activity was) or the session died: cancelling the request
                # makes the SDK send `notifications/cancelled`, so the server stops too.
                work.cancel()
                await asyncio.wait({work}, timeout=_CANCEL_GRACE)
        if work in done:
            return work.result()
        raise _ConnectionLost(f"the session to {self.server.label} ended during the call")


def _server_errlog() -> TextIO:
    """Where a stdio server's stderr goes: this process's stderr, as a real file.

    The SDK's default is `sys.stderr` as it was when `mcp` was first imported, and a
    child process needs a file descriptor: under Jupyter, an IDE or a test's capture,
    `sys.stderr` may have none, and the server would fail to start. Then the
    interpreter's original stderr is used, or the server's stderr is discarded.
    """
    for stream in (sys.stderr, sys.__stderr__):
        try:
            if stream is not None:
                stream.fileno()
                return stream
        except (OSError, ValueError, AttributeError):
            continue
    return open(os.devnull, "w")  # rare (no stderr at all); lives as long as the server


async def _refuse_open_elicitation(
    context: ClientRequestContext, params: mcp_types.ElicitRequestParams
) -> mcp_types.ElicitResult | mcp_types.ErrorData:
    """Refuse a question asked while a call is held open (protocol 2025-11-25 and older).

    Passing a callback announces the elicitation capability, so a 2026-07-28 server asks
    through an input-required result instead, which the run turns into a durable pause
    (see `_mcp_input`). A question asked mid-call could only be answered by holding an
    activity open for a person, which a worker restart would lose: it is refused.
    """
    return mcp_types.ErrorData(
        code=mcp_types.INVALID_REQUEST,
        message=(
            "Elicitation is supported only as an input-required result (MCP 2026-07-28); "
            "this client does not hold a call open for a person's answer"
        ),
    )
