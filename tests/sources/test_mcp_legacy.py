"""A server that pins an older `mcp` major version runs from a virtualenv of its own,
as a stdio subprocess: our client (the 2.x SDK) speaks to it over the wire protocol, so
the two SDKs never share an interpreter."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from temporalio.client import Client

from durable_tools import DurableTools, RunStatus, ToolRegistry
from durable_tools.sources import McpPool, McpStdio, attach_mcp
from support import answer, assert_not_wedged, calls, running_worker, write_script

V1_SERVER = str(Path(__file__).with_name("mcp_v1_server.py"))
VENV = Path(tempfile.gettempdir()) / "durable-tools-tests" / "mcp-v1-venv"
"""Kept between test sessions: installing `mcp<2` from PyPI takes a minute or two."""


def legacy_python() -> Path:
    """The Python of a virtualenv with `mcp<2`, made on first use (then reused)."""
    python = VENV / "bin" / "python"
    ready = VENV / ".ready"
    if ready.exists():
        return python
    VENV.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True)
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "mcp<2"],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    if install.returncode != 0:
        pytest.skip(f"cannot install mcp<2 from the package index: {install.stderr[-500:]}")
    ready.touch()
    return python


@pytest.mark.slow
async def test_a_server_pinning_mcp_1_runs_from_its_own_venv(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    python = legacy_python()
    pool = McpPool(connect_timeout=60)
    try:
        registry = ToolRegistry()
        server = McpStdio(str(python), (V1_SERVER,), name="legacy")
        tools = await attach_mcp(registry, server, pool=pool)
        assert [t.spec.name for t in tools] == ["legacy__sdk_version", "legacy__shout"]
        model = write_script(
            tmp_path,
            [
                calls(("v", "legacy__sdk_version", {}), ("s", "legacy__shout", {"text": "hi"})),
                answer("done"),
            ],
        )
        async with running_worker(client, registry, task_queue):
            run = await DurableTools(client, task_queue).start("legacy", model=model)
            result = await run.result()
            conversation = await run.conversation()
            await assert_not_wedged(run.handle)
    finally:
        await pool.aclose()
    assert result.status == RunStatus.COMPLETED
    replies = {m.tool_call_id: m.content or "" for m in conversation if m.role == "tool"}
    assert replies["v"].startswith("1.")  # the server really runs on the 1.x SDK
    assert replies["s"] == "HI"
