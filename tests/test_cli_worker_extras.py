"""A worker says when it starts which model providers and tool sources it cannot serve for
want of an extra, with the command that installs it."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from temporalio.client import Client

from durable_tools._extras import install_hint
from durable_tools.worker import missing_extras

TOOLS_MODULE = '''
from durable_tools.tools import ToolRegistry

registry = ToolRegistry()


@registry.tool(transport="a2a")
def ask_remote(question: str) -> str:
    """Ask a remote agent."""
    return question
'''

# Loaded before anything else in the worker's interpreter: these SDKs look uninstalled.
HIDE_SDKS = """
import sys

for name in ("anthropic", "pydantic_ai", "a2a"):
    sys.modules[name] = None
"""


async def test_a_worker_names_the_extras_it_lacks_when_it_starts(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    (tmp_path / "remote_tools.py").write_text(TOOLS_MODULE)
    (tmp_path / "sitecustomize.py").write_text(HIDE_SDKS)
    program = Path(sys.executable).parent / "durable-tools"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path]),
        "TEMPORAL_ADDRESS": client.service_client.config.target_host,
        "TEMPORAL_NAMESPACE": client.namespace,
        "DURABLE_TOOLS_TASK_QUEUE": task_queue,
    }
    worker = subprocess.Popen(
        [str(program), "worker", "--tools", "remote_tools", "--graceful-shutdown", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        assert worker.stdout is not None
        banner = await asyncio.to_thread(worker.stdout.readline)
        assert banner.startswith("worker on"), banner
    finally:
        worker.terminate()
        _, err = await asyncio.to_thread(worker.communicate, timeout=30)
    warnings = [line for line in err.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 3, err
    anthropic, pydantic_ai, a2a = warnings
    assert "model provider anthropic: runs with anthropic:MODEL fail" in anthropic
    assert install_hint("anthropic") in anthropic
    assert (
        "model provider pydantic-ai" in pydantic_ai and install_hint("pydantic-ai") in pydantic_ai
    )
    assert "A2A agents (1 tool): their calls fail" in a2a and install_hint("a2a") in a2a
    assert "openai" not in " ".join(warnings)  # installed here: nothing to say


def test_nothing_is_said_when_every_extra_is_there() -> None:
    assert missing_extras() == []
