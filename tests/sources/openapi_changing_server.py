"""A real HTTP API on 127.0.0.1 whose OpenAPI document a test changes between reads.

`GET /openapi.json` serves `document` as it is at that moment (or fails with 500 while
`failing` is set); `GET /v1/items/{id}` and `GET /v2/items/{id}` answer with the version
and the id, so a test sees which operation a call reached.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def item_operation(version: str, *, description: str = "Read one item.") -> dict[str, Any]:
    """`GET /{version}/items/{item_id}` with operationId `get_item`."""
    return {
        "get": {
            "operationId": "get_item",
            "description": description,
            "parameters": [
                {"name": "item_id", "in": "path", "required": True, "schema": {"type": "string"}}
            ],
            "responses": {"200": {"description": "the item"}},
        }
    }


def count_operation() -> dict[str, Any]:
    """`GET /count` with operationId `count_items`."""
    return {
        "get": {
            "operationId": "count_items",
            "description": "How many items there are.",
            "responses": {"200": {"description": "a count"}},
        }
    }


def document(base_url: str, paths: dict[str, Any]) -> dict[str, Any]:
    """An OpenAPI 3.0 document with these paths, served from `base_url`."""
    return {
        "openapi": "3.0.3",
        "info": {"title": "Items", "version": "1"},
        "servers": [{"url": base_url}],
        "paths": paths,
    }


@dataclass
class ChangingApi:
    """The running server: change `document` (or set `failing`) between reads."""

    server: ThreadingHTTPServer
    thread: threading.Thread
    document: dict[str, Any] = field(default_factory=dict)
    failing: bool = False
    without_length: bool = False
    """Send the document with no Content-Length (its end is the connection's close)."""
    reads: int = 0
    calls: list[str] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def document_url(self) -> str:
        return f"{self.base_url}/openapi.json"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def start_changing_api() -> ChangingApi:
    """Start the server on a free port, serving `get_item` on `/v1` and `count_items`."""
    api: ChangingApi

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, payload: Any) -> None:
            body = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            if not api.without_length:
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path == "/openapi.json":
                api.reads += 1
                if api.failing:
                    self._send(500, {"error": "down for maintenance"})
                else:
                    self._send(200, api.document)
                return
            parts = self.path.strip("/").split("/")
            if len(parts) == 3 and parts[1] == "items":
                api.calls.append(self.path)
                self._send(200, {"version": parts[0], "id": parts[2]})
            elif self.path == "/count":
                api.calls.append(self.path)
                self._send(200, {"count": 3})
            else:
                self._send(404, {"error": "no such path"})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    api = ChangingApi(server=server, thread=thread)
    api.document = document(
        api.base_url, {"/v1/items/{item_id}": item_operation("v1"), "/count": count_operation()}
    )
    thread.start()
    return api
