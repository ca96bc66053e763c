"""GitHub's real REST document, and a fake of the few operations tests call.

The document is `generated/api.github.com.json` of the npm package `@octokit/openapi`
23.0.2 (GitHub's own description, 1,223 operations), stored gzip-compressed in
tests/data. `GitHubMock` is a stdlib HTTP server on 127.0.0.1 that answers listing pull
requests and creating an issue comment as GitHub does, and records every request.
"""

from __future__ import annotations

import functools
import gzip
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from durable_tools import ToolRegistry
from durable_tools.sources import attach_openapi

__all__ = ["GITHUB_DOCUMENT", "GitHubMock", "github_document", "github_mock", "github_registry"]

GITHUB_DOCUMENT = Path(__file__).parent / "data" / "github-rest-api.json.gz"


@functools.cache
def _document_text() -> bytes:
    return gzip.decompress(GITHUB_DOCUMENT.read_bytes())


def github_document() -> dict[str, Any]:
    """A fresh parse of GitHub's REST document."""
    document: dict[str, Any] = json.loads(_document_text())
    return document


@functools.cache
def github_registry(base_url: str) -> ToolRegistry:
    """A registry with every operation of GitHub's REST API as a tool, sent to `base_url`.

    Cached: loading the document takes seconds, and tests only read the registry.
    """
    registry = ToolRegistry()
    attach_openapi(registry, github_document(), base_url=base_url)
    return registry


@dataclass
class GitHubMock:
    """What the fake API received: (method, path, query, JSON body) per request."""

    url: str
    requests: list[tuple[str, str, dict[str, list[str]], Any]] = field(default_factory=list)


@contextmanager
def github_mock() -> Iterator[GitHubMock]:
    """Serve the fake API on a free port of 127.0.0.1 for the duration of the block."""
    mock = GitHubMock(url="")

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, method: str) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw else None
            mock.requests.append((method, parts.path, parse_qs(parts.query), body))
            segments = parts.path.strip("/").split("/")
            status, payload = 404, {"message": "Not Found"}
            if method == "GET" and len(segments) == 4 and segments[3] == "pulls":
                status = 200
                payload = [  # type: ignore[assignment]
                    {"number": 7, "title": "Fix the flaky test", "state": "open"},
                    {"number": 9, "title": "Bump httpx", "state": "open"},
                ]
            elif method == "POST" and segments[-1] == "comments" and segments[3] == "issues":
                status = 201
                payload = {"id": 1001, "body": (body or {}).get("body"), "user": {"login": "me"}}
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._answer("GET")

        def do_POST(self) -> None:
            self._answer("POST")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    mock.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield mock
    finally:
        server.shutdown()
        server.server_close()
