"""Live MCP sessions kept by the worker process: one per server, shared by every call.

Each session is a `_Connection` (see `_mcp_connection`), owned by a background task;
calls come from any task and share it. A server reached with a user's OAuth token gets
one session per token (a user's calls never travel on another user's session).

A call whose connection turns out to be dead (server restarted, subprocess gone,
HTTP session unknown to the server) reconnects and is sent once more; if that fails
too, it raises a retryable `ToolExecutionError` and Temporal's retry policy takes over.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from pydantic import ValidationError

from durable_tools.tools import (
    InvalidArguments,
    ToolExecutionError,
    ToolNotFound,
    ToolTimeout,
)

from ._mcp_connection import (
    McpConnectionError,
    _Connection,
    _describe,
    _is_connection_failure,
    require_mcp_sdk,
)
from ._mcp_servers import McpServer, worker_secrets
from ._mcp_watch import ToolListWatch, ToolsChanged

# The MCP SDK is the optional `mcp` extra: without it this package still imports (its
# other sources work) and using an MCP server says what to install (require_mcp_sdk).
with contextlib.suppress(ImportError):
    import mcp_types
    from mcp import ClientSession, MCPError

__all__ = ["McpPool", "ProgressFn", "default_mcp_pool"]

logger = logging.getLogger("durable_tools.sources.mcp")

_MAX_USER_SESSIONS = 32
"""Sessions opened with users' tokens kept per pool; the least recently used closes first."""

ProgressFn = Callable[[float, float | None, str | None], None]
"""Receives an MCP progress notification: progress, total (if known), message."""
_Slot = tuple[asyncio.AbstractEventLoop, str, str]
"""A session's place in the pool: its loop, the server's key, and a user token's digest."""


class McpPool:
    """The MCP sessions of a worker process: one per server and event loop, made lazily.

    Args:
        connect_timeout: Seconds to start (or reach) a server and initialize the session.
    """

    def __init__(self, *, connect_timeout: float = 30.0) -> None:
        self.connect_timeout = connect_timeout
        self._connections: dict[_Slot, _Connection] = {}
        self._locks: dict[_Slot, asyncio.Lock] = {}
        self._listings: dict[str, list[dict[str, Any]]] = {}
        self._offered: dict[str, frozenset[str]] = {}
        self._watch = ToolListWatch()
        self._user_slots: OrderedDict[_Slot, None] = OrderedDict()
        self.connects: Counter[str] = Counter()
        """Sessions opened so far, by server label (for tests and operators)."""

    def watch_tools(self, server: McpServer, callback: ToolsChanged) -> None:
        """Call `callback` whenever `server` says its tool list changed, and after a reconnect
        (see `ToolListWatch.watch`)."""
        self._watch.watch(server, callback)

    @property
    def tool_list_changes(self) -> Counter[str]:
        """Tool-list changes handled so far (notifications and reconnects), by server label."""
        return self._watch.changes

    def offers(self, server: McpServer, mcp_name: str) -> bool:
        """Whether the server's latest listing has the tool (True before any listing)."""
        names = self._offered.get(server.key())
        return names is None or mcp_name in names

    async def settled(self, server: McpServer) -> None:
        """Wait for a tool-list refresh of `server` that is under way, if any (bounded)."""
        await self._watch.settled(server)

    def _slot(self, server: McpServer, bearer: str | None) -> _Slot:
        loop = asyncio.get_running_loop()
        # A session belongs to the loop that made it; forget those of finished loops
        # (e.g. discovery run by `attach_mcp_sync` before the worker's loop started).
        for stale in [k for k in self._connections if k[0].is_closed()]:
            del self._connections[stale]
            self._locks.pop(stale, None)
            self._user_slots.pop(stale, None)
        # A digest, never the token: slots show up in debuggers and reprs.
        user = hashlib.sha256(bearer.encode()).hexdigest() if bearer is not None else ""
        return loop, server.key(), user

    async def connection(
        self,
        server: McpServer,
        secrets: Mapping[str, str] | None = None,
        *,
        bearer: str | None = None,
    ) -> _Connection:
        """The live session to `server`, opened now if there is none (or it died).

        Args:
            server: The server.
            secrets: Worker secrets for `FromSecret` values.
            bearer: A user's OAuth access token: the session is that token's own, and the
                token is sent as `Authorization: Bearer ...` (HTTP servers only).

        Raises:
            McpConnectionError: the server cannot be reached.
            NeedsAuthorization: the server rejected the user's token (HTTP 401).
        """
        require_mcp_sdk()
        slot = self._slot(server, bearer)
        if bearer is not None:
            self._user_slots[slot] = None
            self._user_slots.move_to_end(slot)
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
                server,
                worker_secrets(secrets),
                lambda: self._watch.changed(server),
                bearer=bearer,
            )
            self.connects[server.label] += 1
            await connection.open(self.connect_timeout)
            self._connections[slot] = connection
            if bearer is None:
                # A new session may have missed changes (a lost session, or discovery
                # that ran on another loop): followers list again (if any follow).
                self._watch.changed(server)
            else:
                await self._evict_users()
            return connection

    async def _evict_users(self) -> None:
        while len(self._user_slots) > _MAX_USER_SESSIONS:
            oldest, _ = self._user_slots.popitem(last=False)
            self._locks.pop(oldest, None)
            stale = self._connections.pop(oldest, None)
            if stale is not None:
                await stale.close()

    async def _discard(self, connection: _Connection) -> None:
        for slot, found in list(self._connections.items()):
            if found is connection:
                del self._connections[slot]
        await connection.close()

    async def _request(
        self,
        server: McpServer,
        call: Any,
        secrets: Mapping[str, str] | None,
        bearer: str | None = None,
    ) -> Any:
        """Run `call(session)`, reconnecting and retrying once if the connection was dead."""
        for attempt in (1, 2):
            connection = await self.connection(server, secrets, bearer=bearer)
            try:
                return await connection.request(call)
            except Exception as exc:
                if connection.unauthorized:  # a token that expired or was revoked mid-session
                    await self._discard(connection)
                    raise connection.unauthorized_error() from exc
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
        bearer: str | None = None,
        input_responses: Mapping[str, Any] | None = None,
        request_state: str | None = None,
    ) -> dict[str, Any]:
        """Call the MCP tool `name` and return the `CallToolResult` as a wire dict.

        A server that needs the user's input answers with an `InputRequiredResult`
        instead (its wire dict has `resultType: "input_required"`); the next round sends
        the user's answers as `input_responses` with the echoed `request_state`.

        Args:
            server: The server.
            name: The MCP tool name (as the server spells it).
            arguments: The call's arguments.
            secrets: Worker secrets for the connection.
            timeout: Seconds to wait for the answer; None for the session's default.
            retry_timeouts: Whether a request timeout is worth another attempt.
            progress: Receives the server's progress notifications for this call.
            bearer: The user's OAuth access token (HTTP servers): the call goes on a
                session of that token's own.
            input_responses: The user's answers (MCP `ElicitResult` wire dicts) to the
                previous round's questions, by question key.
            request_state: The server's opaque state from the previous round.

        Raises:
            McpConnectionError: retryable; the server is unreachable even after a reconnect.
            InvalidArguments: the server rejected the arguments (JSON-RPC invalid params).
            NeedsAuthorization: the server rejected the user's token (HTTP 401).
            ToolNotFound: the server has no such tool (any more).
            ToolTimeout: no answer within `timeout`.
            ToolExecutionError: any other protocol error.
        """

        require_mcp_sdk()

        report = progress

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            if report is not None:
                report(progress, total, message)

        responses: mcp_types.InputResponses | None = None
        if input_responses:
            responses = {
                key: mcp_types.ElicitResult.model_validate(value)
                for key, value in input_responses.items()
            }

        async def call(session: ClientSession) -> dict[str, Any]:
            result = await session.call_tool(
                name,
                dict(arguments),
                read_timeout_seconds=timeout,
                progress_callback=on_progress if progress is not None else None,
                input_responses=responses,
                request_state=request_state,
                allow_input_required=True,
            )
            return result.model_dump(mode="json", by_alias=True, exclude_none=True)

        try:
            answer: dict[str, Any] = await self._request(server, call, secrets, bearer)
        except MCPError as error:
            if request_state is not None and error.code == mcp_types.INVALID_PARAMS:
                # The server no longer accepts the state of its own question (the SDK
                # seals it with a per-process key and a TTL, 10 minutes by default).
                raise ToolExecutionError(
                    f"MCP tool {name!r} of {server.label!r} could not take the user's answer: "
                    f"{error.message} (the question's state expired or the server restarted "
                    "since it asked); call the tool again to be asked anew",
                    retryable=False,
                ) from error
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
        bearer: str | None = None,
    ) -> Any:
        """Run `call(session)` on the server's shared session (resources, prompts, ...).

        Args:
            server: The server.
            call: What to send, given the live `ClientSession`.
            what: How errors name the request (e.g. `resource file:///a`).
            secrets: Worker secrets for the connection.
            bearer: The user's OAuth access token, as for `call_tool`.

        Raises:
            McpConnectionError: retryable; the server is unreachable even after a reconnect.
            InvalidArguments: the server rejected the parameters.
            ToolExecutionError: any other protocol error.
        """
        require_mcp_sdk()
        try:
            return await self._request(server, call, secrets, bearer)
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
        mine = [c for (owner, *_), c in self._connections.items() if owner is loop]
        self._user_slots = OrderedDict((k, None) for k in self._user_slots if k[0] is not loop)
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
