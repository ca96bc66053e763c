"""Helpers for the MCP tests: the test server over HTTP as a subprocess on 127.0.0.1."""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from temporalio.client import WorkflowHistory

SERVER = str(Path(__file__).with_name("mcp_test_server.py"))


class HttpServer:
    """`mcp_test_server.py http PORT [TOKENS_FILE]` as a subprocess, restartable.

    Args:
        tokens_file: When given, the server admits only the bearer tokens the file's
            rules admit (see `mcp_test_server._admits`), read at each request.
    """

    def __init__(self, tokens_file: Path | None = None) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.tokens_file = tokens_file
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    async def start(self) -> None:
        extra = [str(self.tokens_file)] if self.tokens_file is not None else []
        self.process = subprocess.Popen(
            [sys.executable, SERVER, "http", str(self.port), *extra],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", self.port)
            except OSError:
                await asyncio.sleep(0.05)
                continue
            writer.close()
            return
        raise RuntimeError("the MCP test server did not start")

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None


def _payload_bytes(node: Any) -> Iterator[bytes]:
    if isinstance(node, dict):
        if "metadata" in node and isinstance(node.get("data"), str):
            yield base64.b64decode(node["data"])
        for value in node.values():
            yield from _payload_bytes(value)
    elif isinstance(node, list):
        for value in node:
            yield from _payload_bytes(value)


def history_bytes(history: WorkflowHistory) -> bytes:
    """Every payload of a history, decoded (`to_json()` shows them base64-encoded, where a
    search for a string could never match)."""
    return b"\n".join(_payload_bytes(json.loads(history.to_json())))
