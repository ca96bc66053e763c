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
from durable_tools import ToolRegistry

registry = ToolRegistry()


@registry.tool(transport="a2a")
def ask_remote(question: str) -> str:
    """Ask a remote agent."""
    return question
'''

# Loaded before anything else in the worker's interpreter: these SDKs look uninstalled.
HIDE_SDKS = """
import sys

for name in ("openai", "anthropic", "pydantic_ai", "a2a", "pydantic_monty"):
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
    # Before: a line for each of the four providers, and nothing about code mode.
    assert len(warnings) == 3, err
    providers, code_mode, a2a = warnings
    assert "model providers not installed: openai, openai-responses, anthropic, pydantic-ai" in (
        providers
    )
    assert install_hint("anthropic", "openai", "pydantic-ai") in providers
    assert "code mode cannot run on this worker" in code_mode
    assert install_hint("code") in code_mode
    assert "A2A agents (1 tool): their calls fail" in a2a and install_hint("a2a") in a2a


def test_one_install_command_names_the_packages_of_several_extras() -> None:
    both = install_hint("anthropic", "code")
    assert both.startswith("pip install ")
    assert "anthropic" in both and "pydantic-monty" in both
    assert both.count("pip install") == 1


def test_nothing_is_said_when_every_extra_is_there() -> None:
    assert missing_extras() == []


# -- a missing extra is one line, not a traceback ----------------------------------------

MCP_TOOLS_MODULE = """
import sys

from durable_tools.sources import McpStdio, attach_mcp_sync
from durable_tools import ToolRegistry

registry = ToolRegistry()
attach_mcp_sync(registry, McpStdio(sys.executable, ("-c", "pass"), name="calc"))
"""


def hidden_sdks_env(tmp_path: Path, client: Client, *modules: str) -> dict[str, str]:
    """The environment of a CLI process in which `modules` look uninstalled."""
    hide = "import sys\n" + "".join(f"sys.modules[{name!r}] = None\n" for name in modules)
    (tmp_path / "sitecustomize.py").write_text(hide)
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path]),
        "TEMPORAL_ADDRESS": client.service_client.config.target_host,
        "TEMPORAL_NAMESPACE": client.namespace,
        "DURABLE_TOOLS_HOME": str(tmp_path / "home"),
    }


def durable_tools(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    program = Path(sys.executable).parent / "durable-tools"
    return subprocess.run(
        [str(program), *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_a_tools_module_needing_a_missing_extra_fails_in_one_line(
    client: Client, tmp_path: Path
) -> None:
    (tmp_path / "mcp_tools.py").write_text(MCP_TOOLS_MODULE)
    env = hidden_sdks_env(tmp_path, client, "mcp")
    result = durable_tools("worker", "--tools", "mcp_tools", env=env)
    assert result.returncode == 2
    [line] = result.stderr.splitlines()  # before: the line, then the traceback
    assert line.startswith("durable-tools: loading tools module 'mcp_tools' failed: ")
    assert install_hint("mcp") in line


def test_an_artifact_store_needing_a_missing_extra_fails_in_one_line(
    client: Client, tmp_path: Path
) -> None:
    env = hidden_sdks_env(tmp_path, client, "aiobotocore")
    env["DURABLE_TOOLS_ARTIFACTS"] = "s3://bucket/prefix"
    result = durable_tools("worker", "--tools", "durable_tools.demo.tools", env=env)
    assert result.returncode == 2
    [line] = result.stderr.splitlines()  # before: a 37-line traceback
    assert line.startswith("durable-tools: the artifact store s3://bucket/prefix needs: ")
    assert install_hint("s3") in line
