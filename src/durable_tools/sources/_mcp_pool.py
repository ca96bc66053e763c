"""Live MCP sessions kept by the worker process: one per server, shared by every call.

The MCP SDK's transports and `ClientSession` are async context managers whose task
groups must be entered and left by one task. So each session lives in a background
task of its own (`_Connection._own`) that enters the transport and the session, and
leaves them when asked to close or when the transport dies. Calls come from any task
(each activity runs in its own): they send requests on the shared session and race
the answer against the connection's end, so a dead server fails a call at once
instead of leaving it waiting.

A call whose connection turns out to be dead (server restarted, subprocess gone,
HTTP session unknown to the server) reconnects and is sent once more; if that fails
too, it raises a retryable `ToolExecutionError` and Temporal's retry policy takes over.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from typing import Any

from pydantic import ValidationError

from durable_tools.tools import (
    InvalidArguments,
    ToolExecutionError,
    ToolNotFound,
    ToolTimeout,
)

from ._mcp_servers import McpServer, McpStdio, resolve_value, worker_secrets

# The MCP SDK is the optional `mcp` extra: without it this package still imports (its
# other sources work) and using an MCP server says what to install.
try:
    import anyio
    import httpx2
    import mcp_types
    from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
    from mcp.client.streamable_http import streamable_http_client
except ImportError as _error:  # pragma: no cover - exercised only without the extra
    _MISSING_SDK: ImportError | None = _error
else:
    _MISSING_SDK = None

__all__ = ["McpConnectionError", "McpPool", "ProgressFn", "ToolsChanged", "default_mcp_pool"]

logger = logging.getLogger("durable_tools.sources.mcp")

_CLIENT_NAME = "durable-tools"
_CLOSE_GRACE = 5.0
"""Seconds a closing session gets to shut its transport down (stop the subprocess)."""
_CANCEL_GRACE = 2.0
"""Seconds an abandoned call gets to send MCP's `notifications/cancelled`."""
_SETTLE_TIMEOUT = 30.0
"""Longest a call waits for the catalog refresh that the server's tool-list change started."""

ProgressFn = Callable[[float, float | None, str | None], None]
"""Receives an MCP progress notification: progress, total (if known), message."""
ToolsChanged = Callable[[], Awaitable[None]]
"""Called (in a task of its own) after the server said its tool list changed."""


def require_mcp_sdk() -> None:
    """Raise a helpful ImportError when the `mcp` extra is not installed."""
    if _MISSING_SDK is not None:
        raise ImportError(
            f"MCP tool sources need the MCP SDK: pip install 'durable-tools[mcp]' ({_MISSING_SDK})"
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
    ) -> None:
        self.server = server
        self._secrets = dict(secrets)
        self._on_tools_changed = on_tools_changed
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
                    )
                )
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

    def _open_error(self, exc: BaseException) -> ToolExecutionError:
        if isinstance(exc, LookupError):  # a missing secret: no retry can fix that
            return ToolExecutionError(str(exc), retryable=False)
        return McpConnectionError(
            f"cannot connect to MCP server {self.server.label!r}: {_describe(exc)}",
            server=self.server.label,
        )

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
            return stdio_client(params)
        headers = {
            key: resolve_value(value, self._secrets, what=f"header {key} of {server.label}")
            for key, value in server.headers.items()
        }
        client = httpx2.AsyncClient(
            headers=headers, timeout=httpx2.Timeout(server.timeout, read=300.0)
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


class McpPool:
    """The MCP sessions of a worker process: one per server and event loop, made lazily.

    Args:
        connect_timeout: Seconds to start (or reach) a server and initialize the session.
    """

    def __init__(self, *, connect_timeout: float = 30.0) -> None:
        self.connect_timeout = connect_timeout
        self._connections: dict[tuple[asyncio.AbstractEventLoop, str], _Connection] = {}
        self._locks: dict[tuple[asyncio.AbstractEventLoop, str], asyncio.Lock] = {}
        self._listings: dict[str, list[dict[str, Any]]] = {}
        self._offered: dict[str, frozenset[str]] = {}
        self._watchers: dict[str, list[ToolsChanged]] = {}
        self._refreshing: dict[str, asyncio.Task[None]] = {}
        self._again: set[str] = set()
        self.connects: Counter[str] = Counter()
        """Sessions opened so far, by server label (for tests and operators)."""
        self.tool_list_changes: Counter[str] = Counter()
        """Tool-list changes handled so far (notifications and reconnects), by server label."""

    def watch_tools(self, server: McpServer, callback: ToolsChanged) -> None:
        """Call `callback` whenever `server` says its tool list changed, and after a reconnect.

        A notification is handled while a session to the server is open (the first call
        or discovery opens one); a new session may have missed changes, so it counts as
        one too. Callbacks run one change at a time, in a task of their own.
        """
        self._watchers.setdefault(server.key(), []).append(callback)

    def _tools_changed(self, server: McpServer) -> None:
        key = server.key()
        if not self._watchers.get(key):
            return
        running = self._refreshing.get(key)
        if running is not None and not running.done():
            self._again.add(key)  # changed again during a refresh: one more pass after it
            return
        self._refreshing[key] = asyncio.get_running_loop().create_task(
            self._run_watchers(server), name=f"mcp-refresh:{server.label}"
        )

    async def _run_watchers(self, server: McpServer) -> None:
        key = server.key()
        while True:
            self._again.discard(key)
            self.tool_list_changes[server.label] += 1
            for callback in list(self._watchers.get(key, ())):
                try:
                    await callback()
                except Exception as exc:  # a refresh must never take the session down
                    logger.warning(
                        "refreshing the tools of MCP server %s failed: %s",
                        server.label,
                        _describe(exc),
                    )
            if key not in self._again:
                return

    def offers(self, server: McpServer, mcp_name: str) -> bool:
        """Whether the server's latest listing has the tool (True before any listing)."""
        names = self._offered.get(server.key())
        return names is None or mcp_name in names

    async def settled(self, server: McpServer) -> None:
        """Wait for a tool-list refresh of `server` that is under way, if any (bounded)."""
        running = self._refreshing.get(server.key())
        if running is None or running.done() or running is asyncio.current_task():
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(running), _SETTLE_TIMEOUT)

    def _slot(self, server: McpServer) -> tuple[asyncio.AbstractEventLoop, str]:
        loop = asyncio.get_running_loop()
        # A session belongs to the loop that made it; forget those of finished loops
        # (e.g. discovery run by `attach_mcp_sync` before the worker's loop started).
        for stale in [k for k in self._connections if k[0].is_closed()]:
            del self._connections[stale]
            self._locks.pop(stale, None)
        return loop, server.key()

    async def connection(
        self, server: McpServer, secrets: Mapping[str, str] | None = None
    ) -> _Connection:
        """The live session to `server`, opened now if there is none (or it died).

        Raises:
            McpConnectionError: the server cannot be reached.
        """
        require_mcp_sdk()
        slot = self._slot(server)
        found = self._connections.get(slot)
        if found is not None and found.alive:
            return found
        lock = self._locks.setdefault(slot, asyncio.Lock())
        async with lock:
            found = self._connections.get(slot)
            if found is not None and found.alive:
                return found
            if found is not None:
                await found.close()
            connection = _Connection(
                server, worker_secrets(secrets), lambda: self._tools_changed(server)
            )
            self.connects[server.label] += 1
            await connection.open(self.connect_timeout)
            self._connections[slot] = connection
            # A new session may have missed changes (a lost session, or discovery that ran
            # on another loop): followers list again. Nothing to do before any follow.
            self._tools_changed(server)
            return connection

    async def _discard(self, connection: _Connection) -> None:
        for slot, found in list(self._connections.items()):
            if found is connection:
                del self._connections[slot]
        await connection.close()

    async def _request(
        self, server: McpServer, call: Any, secrets: Mapping[str, str] | None
    ) -> Any:
        """Run `call(session)`, reconnecting and retrying once if the connection was dead."""
        for attempt in (1, 2):
            connection = await self.connection(server, secrets)
            try:
                return await connection.request(call)
            except Exception as exc:
                if not _is_connection_failure(exc):
                    raise
                await self._discard(connection)
                if attempt == 2:
                    raise McpConnectionError(
                        f"lost the connection to MCP server {server.label!r}: {_describe(exc)}",
                        server=server.label,
                    ) from exc
                logger.info("reconnecting to MCP server %s: %s", server.label, _describe(exc))
        raise AssertionError("unreachable")

    async def list_tools(
        self,
        server: McpServer,
        *,
        secrets: Mapping[str, str] | None = None,
        refresh: bool = False,
    ) -> list[dict[str, Any]]:
        """The server's tools as MCP wire dicts (`name`, `inputSchema`, `annotations`, ...).

        The listing is cached per server; `refresh=True` lists again.
        """
        require_mcp_sdk()
        key = server.key()
        if not refresh and key in self._listings:
            return self._listings[key]

        async def list_all(session: ClientSession) -> list[dict[str, Any]]:
            tools: list[dict[str, Any]] = []
            cursor: str | None = None
            while True:
                params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
                page = await session.list_tools(params=params)
                tools += [
                    t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in page.tools
                ]
                cursor = page.next_cursor
                if not cursor:
                    return tools

        try:
            listing: list[dict[str, Any]] = await self._request(server, list_all, secrets)
        except MCPError as error:
            raise McpConnectionError(
                f"MCP server {server.label!r} refused to list its tools: {error.message}",
                server=server.label,
            ) from error
        self._listings[key] = listing
        self._offered[key] = frozenset(str(tool.get("name")) for tool in listing)
        return listing

    async def call_tool(
        self,
        server: McpServer,
        name: str,
        arguments: Mapping[str, Any],
        *,
        secrets: Mapping[str, str] | None = None,
        timeout: float | None = None,
        retry_timeouts: bool = False,
        progress: ProgressFn | None = None,
    ) -> dict[str, Any]:
        """Call the MCP tool `name` and return the `CallToolResult` as a wire dict.

        Args:
            server: The server.
            name: The MCP tool name (as the server spells it).
            arguments: The call's arguments.
            secrets: Worker secrets for the connection.
            timeout: Seconds to wait for the answer; None for the session's default.
            retry_timeouts: Whether a request timeout is worth another attempt.
            progress: Receives the server's progress notifications for this call.

        Raises:
            McpConnectionError: retryable; the server is unreachable even after a reconnect.
            InvalidArguments: the server rejected the arguments (JSON-RPC invalid params).
            ToolNotFound: the server has no such tool (any more).
            ToolTimeout: no answer within `timeout`.
            ToolExecutionError: any other protocol error.
        """

        require_mcp_sdk()

        report = progress

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            if report is not None:
                report(progress, total, message)

        async def call(session: ClientSession) -> dict[str, Any]:
            result = await session.call_tool(
                name,
                dict(arguments),
                read_timeout_seconds=timeout,
                progress_callback=on_progress if progress is not None else None,
            )
            return result.model_dump(mode="json", by_alias=True, exclude_none=True)

        try:
            answer: dict[str, Any] = await self._request(server, call, secrets)
        except MCPError as error:
            raise _classify(
                error, server=server.label, tool=name, retry_timeouts=retry_timeouts
            ) from error
        except (ValidationError, RuntimeError) as error:
            # A result that breaks the protocol or the tool's output schema, or a server
            # asking for input mid-call: another attempt would get the same.
            raise ToolExecutionError(
                f"MCP tool {name!r} of {server.label!r} gave an unusable answer: {error}",
                retryable=False,
            ) from error
        return answer

    async def request(
        self,
        server: McpServer,
        call: Callable[[ClientSession], Awaitable[Any]],
        *,
        what: str,
        secrets: Mapping[str, str] | None = None,
    ) -> Any:
        """Run `call(session)` on the server's shared session (resources, prompts, ...).

        Args:
            server: The server.
            call: What to send, given the live `ClientSession`.
            what: How errors name the request (e.g. `resource file:///a`).
            secrets: Worker secrets for the connection.

        Raises:
            McpConnectionError: retryable; the server is unreachable even after a reconnect.
            InvalidArguments: the server rejected the parameters.
            ToolExecutionError: any other protocol error.
        """
        require_mcp_sdk()
        try:
            return await self._request(server, call, secrets)
        except MCPError as error:
            raise _classify(
                error,
                server=server.label,
                tool=what,
                retry_timeouts=False,
                where=f"{what} of MCP server {server.label!r}",
            ) from error

    async def aclose(self) -> None:
        """Close every session of the running loop (stops stdio subprocesses)."""
        loop = asyncio.get_running_loop()
        mine = [c for (owner, _), c in self._connections.items() if owner is loop]
        self._connections = {k: c for k, c in self._connections.items() if k[0] is not loop}
        await asyncio.gather(*(c.close() for c in mine))


def _classify(
    error: MCPError, *, server: str, tool: str, retry_timeouts: bool, where: str | None = None
) -> Exception:
    where = where or f"MCP tool {tool!r} of {server!r}"
    if error.code == mcp_types.INVALID_PARAMS:
        return InvalidArguments(f"{where} rejected the arguments: {error.message}")
    if error.code == mcp_types.METHOD_NOT_FOUND:
        return ToolNotFound(f"{where} is not available: {error.message}", details={"tool": tool})
    if error.code == mcp_types.REQUEST_TIMEOUT:
        return ToolTimeout(f"{where} did not answer in time", retryable=retry_timeouts)
    retryable = error.code == mcp_types.INTERNAL_ERROR
    return ToolExecutionError(
        f"{where} failed: {error.message}",
        retryable=retryable,
        details={"mcp_error_code": error.code},
    )


_default_pool = McpPool()


def default_mcp_pool() -> McpPool:
    """The process-wide pool that `attach_mcp` uses unless given another."""
    return _default_pool
