"""An API that echoes a `QuerySecret` key (in a pagination link, an error body or a
redirect) never gets it into a tool's result or error, in any encoding.

The server is a real HTTP server on 127.0.0.1 that echoes the request's raw target, so
the key comes back exactly as httpx put it on the wire (percent-encoded).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, quote, quote_plus, urlsplit

import pytest

from durable_tools import ToolContext, ToolExecutionError, ToolRegistry
from durable_tools.sources import QuerySecret, http_tool

# '/', '+', '=' and a space: its URL-encoded form differs from the raw one.
KEY = "qk/LEAK+check=7 f00d"


class EchoHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        sent = parse_qs(parts.query).get("api_key", [""])[0]
        headers: dict[str, str] = {}
        if parts.path == "/items":
            status, body = 200, {"items": [1, 2], "next": f"/items?page=2&{parts.query}"}
        elif parts.path == "/raw":
            status, body = 200, {"you_sent": sent, "repr": repr(sent)}
        elif parts.path == "/fail":
            status, body = 400, {"error": f"bad request {self.path}", "key": quote_plus(sent)}
        elif parts.path == "/busy":
            status, body = 503, {"error": f"overloaded serving {self.path}"}
        else:
            status, body = 302, {}
            headers["Location"] = f"/elsewhere?{parts.query}"
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def echo_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), EchoHandler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def leaks(text: str) -> list[str]:
    forms = {KEY, quote(KEY, safe=""), quote_plus(KEY), quote(KEY), json.dumps(KEY)[1:-1]}
    return [form for form in forms if form in text]


def registry(base_url: str) -> ToolRegistry:
    tools = ToolRegistry()
    for name, path in [
        ("list_items", "/items"),
        ("raw", "/raw"),
        ("fail", "/fail"),
        ("busy", "/busy"),
        ("moved", "/moved"),
    ]:
        http_tool(
            tools,
            name=name,
            method="GET",
            url_template=f"{base_url}{path}",
            auth=QuerySecret("api_key", "key"),
        )
    return tools


def ctx(name: str) -> ToolContext:
    # The tool layer alone, no activity: the HTTP source scrubs its own credentials.
    return ToolContext(tool_call_id="c1", tool_name=name, secrets={"key": KEY})


async def test_a_pagination_link_and_an_echo_lose_the_key(echo_server: str) -> None:
    tools = registry(echo_server)
    listed = await tools.invoke("list_items", {}, ctx("list_items"))
    assert listed.structured["items"] == [1, 2]
    assert listed.structured["next"] == "/items?page=2&api_key=[redacted]"
    echoed = await tools.invoke("raw", {}, ctx("raw"))
    assert echoed.structured == {"you_sent": "[redacted]", "repr": "'[redacted]'"}
    for result in (listed, echoed):
        assert leaks(result.model_dump_json()) == []


@pytest.mark.parametrize("tool", ["fail", "busy", "moved"])
async def test_errors_that_quote_the_request_lose_the_key(echo_server: str, tool: str) -> None:
    with pytest.raises(ToolExecutionError) as failed:
        await registry(echo_server).invoke(tool, {}, ctx(tool))
    assert "[redacted]" in failed.value.message
    assert leaks(failed.value.message) == []
    assert leaks(json.dumps(failed.value.details)) == []
