"""`durable-tools codec-server` as a user runs it: keys from the environment, tokens file."""

from __future__ import annotations

import asyncio
import base64
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from codec_support import KEY, codec
from temporalio.api.common.v1 import Payload

from durable_tools.inbox import add_token
from support import free_port

CLI = [sys.executable, "-m", "durable_tools.cli"]


def test_without_keys_it_refuses_to_start(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DURABLE_TOOLS_CODEC")}
    env["DURABLE_TOOLS_HOME"] = str(tmp_path)
    done = subprocess.run(
        [*CLI, "codec-server", "--port", "0"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0
    assert "DURABLE_TOOLS_CODEC_KEYS" in done.stderr


async def test_it_decodes_for_a_token_holder(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.json"
    token = add_token(tokens, "alice")
    port = free_port()
    env = {
        **os.environ,
        "DURABLE_TOOLS_CODEC_KEYS": f"test-key-1:{base64.b64encode(KEY).decode()}",
        "DURABLE_TOOLS_HOME": str(tmp_path),
    }
    command = [*CLI, "codec-server", "--port", str(port), "--tokens-file", str(tokens)]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    [sealed] = await codec().encode([Payload(metadata={"encoding": b"json/plain"}, data=b"1")])
    body = {
        "payloads": [
            {
                "metadata": {k: base64.b64encode(v).decode() for k, v in sealed.metadata.items()},
                "data": base64.b64encode(sealed.data).decode(),
            }
        ]
    }
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            for _ in range(300):
                if process.poll() is not None:
                    pytest.fail(f"codec-server exited: {process.communicate()[1]!r}")
                try:
                    await http.get("/health")
                    break
                except httpx.TransportError:
                    await asyncio.sleep(0.1)
            refused = await http.post("/decode", json=body)
            decoded = await http.post(
                "/decode", json=body, headers={"Authorization": f"Bearer {token}"}
            )
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert refused.status_code == 401
    [plain] = decoded.json()["payloads"]
    assert base64.b64decode(plain["data"]) == b"1"
