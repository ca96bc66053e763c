"""Images and binary output from MCP and HTTP tools are stored as artifacts, not dropped."""

from __future__ import annotations

import base64
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from durable_tools import DurableTools, RunStatus, ToolContext, ToolRegistry
from durable_tools.sources import McpPool, McpStdio, attach_mcp, http_tool
from durable_tools.tools import FileSystemArtifactStore
from support import answer, assert_not_wedged, calls, running_worker, write_script

MCP_SERVER = str(Path(__file__).parents[1] / "sources" / "mcp_test_server.py")
# The 1x1 PNG the MCP test server's `picture` tool returns.
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


@pytest.fixture
async def pool() -> AsyncIterator[McpPool]:
    pool = McpPool(connect_timeout=20)
    yield pool
    await pool.aclose()


@pytest.fixture
def binary_server() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return None

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.send_header("Content-Length", str(len(PIXEL)))
            self.end_headers()
            self.wfile.write(PIXEL)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


async def test_an_mcp_image_is_stored_as_an_artifact(
    client: Client, task_queue: str, tmp_path: Path, pool: McpPool
) -> None:
    registry = ToolRegistry()
    server = McpStdio(sys.executable, (MCP_SERVER, "stdio"), name="calc")
    await attach_mcp(registry, server, pool=pool, include=["picture"])
    store = FileSystemArtifactStore(tmp_path / "artifacts")
    model = write_script(tmp_path, [calls(("p", "calc__picture", {})), answer("seen")])
    async with running_worker(client, registry, task_queue, artifact_store=store):
        run = await DurableTools(client, task_queue).start("look", model=model)
        result = await run.result()
        [record] = await run.timeline()
        events = await run.events()
        conversation = await run.conversation()
        await assert_not_wedged(run.handle)
    assert result.status == RunStatus.COMPLETED
    [ref] = record.artifacts
    assert ref.media_type == "image/png" and store.get(ref) == PIXEL
    [completed] = [e for e in events if e.event == "tool.completed"]
    assert completed.artifacts == [ref] and completed.transport == "mcp"
    [reply] = [m.content or "" for m in conversation if m.role == "tool"]
    assert reply.startswith("a pixel")
    assert f"[image image/png stored as artifact {ref.uri}" in reply


async def test_a_binary_http_response_is_stored_as_an_artifact(
    binary_server: str, tmp_path: Path
) -> None:
    registry = ToolRegistry()
    tool = http_tool(registry, name="logo", method="GET", url_template=binary_server + "/logo")
    assert tool.spec.transport == "http"  # how the audit stream knows the transport
    store = FileSystemArtifactStore(tmp_path)
    context = ToolContext(tool_call_id="c1", tool_name="logo", artifact_store=store)
    result = await registry.invoke("logo", {}, context)
    [ref] = result.artifacts
    assert ref.media_type == "image/png" and store.get(ref) == PIXEL
    assert result.content[0].text == (
        f"HTTP 200: image/png stored as artifact {ref.uri} ({len(PIXEL)} bytes)"
    )
