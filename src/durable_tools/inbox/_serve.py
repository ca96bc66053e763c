"""Serving the inbox app with uvicorn on the running event loop."""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path

import uvicorn
from starlette.applications import Starlette

from durable_tools.server import default_data_dir

__all__ = ["SECRET_ENV", "InboxServer", "default_tokens_file", "session_secret"]

SECRET_ENV = "DURABLE_TOOLS_INBOX_SECRET"
"""Environment variable holding the session cookie's signing secret."""


def default_tokens_file() -> Path:
    """`$DURABLE_TOOLS_HOME/inbox-tokens.json`."""
    return default_data_dir() / "inbox-tokens.json"


def session_secret(path: str | None = None) -> str:
    """The session secret: from a file, else `DURABLE_TOOLS_INBOX_SECRET`, else empty (a
    random one per process: sessions then end when the inbox restarts)."""
    if path:
        return Path(path).read_text().strip()
    return os.environ.get(SECRET_ENV, "")


class InboxServer:
    """uvicorn serving the app on an already bound socket (port 0 picks a free port).

    The app sees the TCP peer as the client: forwarding headers are not applied.

    Args:
        app: The inbox app.
        host: Listen address; keep loopback unless a TLS proxy is in front.
        port: Listen port.
    """

    def __init__(self, app: Starlette, host: str = "127.0.0.1", port: int = 8765) -> None:
        # No access log: the OAuth callback's URL carries a code and a state.
        # No proxy headers: uvicorn would otherwise rewrite the client address from
        # X-Forwarded-For (trusting 127.0.0.1 by default), and the trusted-proxy check
        # must see the socket's peer, not what any local process claims.
        config = uvicorn.Config(
            app,
            log_level="warning",
            access_log=False,
            lifespan="on",
            proxy_headers=False,
            forwarded_allow_ips="",
        )
        self._server = uvicorn.Server(config)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._socket = socket.socket(family, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind((host, port))
        self.host = host
        self.port = int(self._socket.getsockname()[1])
        self._task: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        """The base URL."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def start(self) -> None:
        """Serve in the background; returns once the server accepts connections."""
        self._task = asyncio.create_task(self._server.serve(sockets=[self._socket]))
        while not self._server.started:
            if self._task.done():
                await self._task
                raise RuntimeError("the inbox server stopped while starting")
            await asyncio.sleep(0.02)

    async def stop(self) -> None:
        """Stop serving (open requests finish first)."""
        self._server.should_exit = True
        if self._task is not None:
            await self._task
        self._socket.close()
