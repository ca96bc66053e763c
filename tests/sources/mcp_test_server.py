"""A real MCP server for the MCP source tests (the official SDK's `MCPServer`).

Run it over stdio (`python mcp_test_server.py stdio`) or streamable HTTP on 127.0.0.1
(`python mcp_test_server.py http PORT`). Its tools cover what the tests need: plain and
structured results, an error result, a slow call that notices cancellation, annotations,
a name that needs sanitizing, progress notifications, image and audio content, a tool
that appears after `enable_extra` runs and goes after `disable_extra` (both announce it
with `notifications/tools/list_changed`), and resources and prompts.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import sys
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import AudioContent, CallToolResult, ImageContent, TextContent, ToolAnnotations
from pydantic import BaseModel

server = MCPServer("durable-tools-test", log_level="WARNING")

# What this process has seen, for tests that look inside the server.
_state: dict[str, Any] = {"in_flight": 0, "max_in_flight": 0, "cancelled": 0, "calls": 0}

# A 1x1 transparent PNG.
_PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


@server.tool(
    title="Add two numbers",
    annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True),
)
def add(a: int, b: int) -> int:
    """Add two integers."""
    _state["calls"] += 1
    return a + b


@server.tool(title="<b>Echo</b> \u202eback")  # no label: markup and a bidi control
def echo(text: str) -> str:
    """Echo the text back."""
    _state["calls"] += 1
    return text


@server.tool()
def fail(reason: str = "it broke") -> CallToolResult:
    """Always report a failure as an error result."""
    return CallToolResult(
        content=[TextContent(type="text", text=f"failed: {reason}")], is_error=True
    )


@server.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False))
async def slow(seconds: float) -> str:
    """Sleep, then say how long; counts calls in flight and cancelled calls."""
    _state["in_flight"] += 1
    _state["max_in_flight"] = max(_state["max_in_flight"], _state["in_flight"])
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        _state["cancelled"] += 1
        raise
    finally:
        _state["in_flight"] -= 1
    return f"slept {seconds}"


@server.tool(
    annotations=ToolAnnotations(destructive_hint=True, open_world_hint=True, read_only_hint=False)
)
def delete_file(path: str) -> str:
    """Pretend to delete a file."""
    return f"deleted {path}"


@server.tool(name="Get-Weather.v2")
def get_weather(city: str) -> dict[str, Any]:
    """Weather for a city, as structured content."""
    return {"city": city, "temperature_c": 21}


@server.tool(structured_output=False)
def picture() -> list[Any]:
    """A caption and a tiny image."""
    return [
        TextContent(type="text", text="a pixel"),
        ImageContent(type="image", data=base64.b64encode(_PIXEL).decode(), mime_type="image/png"),
    ]


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def server_state() -> dict[str, Any]:
    """What this server process has seen (pid, calls in flight, cancellations)."""
    return {**_state, "pid": os.getpid()}


# A WAV header and a few samples: not meant to be played, only to be kept as bytes.
_AUDIO = b"RIFF$\x00\x00\x00WAVEfmt " + bytes(range(32))


@server.tool(structured_output=False)
def sound() -> list[Any]:
    """A short audio clip."""
    data = base64.b64encode(_AUDIO).decode()
    return [AudioContent(type="audio", data=data, mime_type="audio/wav")]


_release = asyncio.Event()


@server.tool()
async def count_up(steps: int, ctx: Context, hold: bool = False) -> str:
    """Count to `steps`, reporting progress at each step; with `hold`, wait for `release`."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step} of {steps}")
    if hold:
        await _release.wait()
        _release.clear()
    return f"counted to {steps}"


@server.tool()
def release() -> str:
    """Let a held `count_up` call finish."""
    _release.set()
    return "released"


def extra(word: str) -> str:
    """A tool that exists only after `enable_extra` ran."""
    return word.upper()


def _has_extra() -> bool:
    return any(t.name == "extra" for t in server._tool_manager.list_tools())


@server.tool()
async def enable_extra(ctx: Context) -> str:
    """Add the `extra` tool to this server process and announce the change."""
    if not _has_extra():
        server.add_tool(extra)
    await ctx.session.send_tool_list_changed()
    return "enabled"


@server.tool()
async def disable_extra(ctx: Context) -> str:
    """Remove the `extra` tool and announce the change."""
    if _has_extra():
        server.remove_tool("extra")
    await ctx.session.send_tool_list_changed()
    return "disabled"


@server.resource("notes://today", mime_type="text/plain")
def today() -> str:
    """Today's notes."""
    return "buy milk"


@server.resource("blobs://pixel", mime_type="image/png")
def pixel() -> bytes:
    """A tiny PNG, as a binary resource."""
    return _PIXEL


@server.prompt()
def review(language: str, code: str) -> str:
    """Ask for a code review."""
    return f"Review this {language} code: {code}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def whoami(ctx: Context) -> str:
    """Who called (over HTTP): a digest of the bearer token, never the token itself."""
    request = ctx.request_context.request
    header = request.headers.get("authorization", "") if request is not None else ""
    token = header.removeprefix("Bearer ")
    return hashlib.sha256(token.encode()).hexdigest()[:16] if token else "anonymous"


def _admits(rules: set[str], token: str) -> bool:
    # A line is a token let in, `-TOKEN` one kept out, `*` any other non-empty token.
    if not token or f"-{token}" in rules:
        return False
    return token in rules or "*" in rules


def _bearer_only(app: Any, rules: set[str]) -> Any:
    """ASGI middleware: 401 for any request whose bearer token the rules do not admit."""

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            token = headers.get(b"authorization", b"").decode().removeprefix("Bearer ")
            if not _admits(rules, token):
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
        await app(scope, receive, send)

    return guarded


async def _serve_http(port: int, tokens_file: str | None) -> None:
    if tokens_file is None:
        await server.run_streamable_http_async(host="127.0.0.1", port=port)
        return
    import uvicorn

    def allowed() -> set[str]:  # read at each request: a test revokes a token by editing it
        with open(tokens_file) as handle:
            return {line.strip() for line in handle if line.strip()}

    app = server.streamable_http_app(host="127.0.0.1")

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        await _bearer_only(app, allowed())(scope, receive, send)

    config = uvicorn.Config(guarded, host="127.0.0.1", port=port, log_level="warning")
    await uvicorn.Server(config).serve()


class _Name(BaseModel):
    name: str


@server.tool()
async def greet_someone(ctx: Context) -> str:
    """Ask the user for a name (MCP elicitation), then greet them."""
    answer = await ctx.elicit("Whom should I greet?", _Name)
    if answer.action != "accept":
        return f"nobody to greet ({answer.action})"
    return f"hello {answer.data.name}"


def main(argv: list[str]) -> None:
    mode = argv[1] if len(argv) > 1 else "stdio"
    if mode == "stdio" and len(argv) > 2 and os.path.exists(argv[2]):
        server.add_tool(extra)  # `stdio FLAG_FILE`: start with `extra` when the file exists
    if mode == "stdio":
        server.run("stdio")
    elif mode == "http":
        # `http PORT [TOKENS_FILE]`: with a file, only its bearer tokens get in.
        asyncio.run(_serve_http(int(argv[2]), argv[3] if len(argv) > 3 else None))
    else:
        raise SystemExit(f"usage: {argv[0]} stdio [FLAG_FILE] | http PORT [TOKENS_FILE]")


if __name__ == "__main__":
    main(sys.argv)
