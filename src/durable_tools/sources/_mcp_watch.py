"""Following an MCP server's tool list: who to call when it changes, one change at a time."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import Awaitable, Callable

from ._mcp_connection import _describe
from ._mcp_servers import McpServer

__all__ = ["MIN_REFRESH_INTERVAL", "ToolListWatch", "ToolsChanged"]

logger = logging.getLogger("durable_tools.sources.mcp")

ToolsChanged = Callable[[], Awaitable[None]]
"""Called (in a task of its own) after the server said its tool list changed."""

MIN_REFRESH_INTERVAL = 0.5
"""Seconds between the starts of two refreshes of one server's tools. The first change is
followed at once; a server that announces changes over and over (a flood of
`list_changed`) gets its tools listed at most this often, not once per notification."""

_SETTLE_TIMEOUT = 30.0
"""Longest a call waits for the catalog refresh that the server's tool-list change started."""


class ToolListWatch:
    """The callbacks that follow each server's tool list, and the refresh under way."""

    def __init__(self) -> None:
        self._watchers: dict[str, list[ToolsChanged]] = {}
        self._refreshing: dict[str, asyncio.Task[None]] = {}
        self._again: set[str] = set()
        self._last_start: dict[str, float] = {}
        self.changes: Counter[str] = Counter()
        """Tool-list changes handled so far (notifications and reconnects), by server label."""

    def watch(self, server: McpServer, callback: ToolsChanged) -> None:
        """Call `callback` whenever `server` says its tool list changed, and after a reconnect.

        A notification is handled while a session to the server is open (the first call
        or discovery opens one); a new session may have missed changes, so it counts as
        one too. Callbacks run one change at a time, in a task of their own.
        """
        self._watchers.setdefault(server.key(), []).append(callback)

    def changed(self, server: McpServer) -> None:
        """The server's tool list changed (or may have): run its callbacks, once at a time."""
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
        loop = asyncio.get_running_loop()
        while True:
            wait = self._last_start.get(key, -MIN_REFRESH_INTERVAL) + MIN_REFRESH_INTERVAL
            if wait > loop.time():
                await asyncio.sleep(wait - loop.time())
            self._last_start[key] = loop.time()
            self._again.discard(key)
            self.changes[server.label] += 1
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

    async def settled(self, server: McpServer) -> None:
        """Wait for a tool-list refresh of `server` that is under way, if any (bounded)."""
        running = self._refreshing.get(server.key())
        if running is None or running.done() or running is asyncio.current_task():
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(running), _SETTLE_TIMEOUT)
