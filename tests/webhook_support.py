"""A webhook receiver on 127.0.0.1 for the notification tests: records each POST."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """A tiny HTTP server that records each POST and answers `status`."""

    status: int = 204
    requests: list[Received] = field(default_factory=list)
    url: str = ""

    def events(self, path: str = "/hook") -> list[str]:
        """The `event` of each notification received at `path`."""
        return [json.loads(r.body)["event"] for r in self.requests if r.path == path]

    async def wait_for(self, event: str, path: str = "/hook", timeout: float = 20) -> Any:
        """The first notification of `event` received at `path`, as sent."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            found = [
                body
                for body in (json.loads(r.body) for r in self.requests if r.path == path)
                if body["event"] == event
            ]
            if found:
                return found[0]
            assert asyncio.get_running_loop().time() < deadline, f"no {event}: {self.events()}"
            await asyncio.sleep(0.1)

    async def slack_message(self, path: str = "/slack", timeout: float = 20) -> Any:
        """The first Slack message received at `path` (a Slack body names no event)."""
        deadline = asyncio.get_running_loop().time() + timeout
        while not any(r.path == path for r in self.requests):
            assert asyncio.get_running_loop().time() < deadline, "no Slack message"
            await asyncio.sleep(0.1)
        return json.loads(next(r.body for r in self.requests if r.path == path))


@contextmanager
def webhook_receiver() -> Iterator[Receiver]:
    """A running receiver; its `url` is the server's root."""
    state = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            state.requests.append(Received(self.path, dict(self.headers.items()), body))
            self.send_response(state.status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
