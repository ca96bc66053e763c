"""run_command leaves nothing behind: background jobs, setsid children, stdout holders."""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from durable_tools import ToolContext, ToolRegistry, ToolResult
from durable_tools.workspace import register_workspace_tools

pytestmark = pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")


def alive(marker: str) -> list[int]:
    """Live processes (not zombies) whose environment carries `marker`."""
    needle = f"DT_TEST_MARKER={marker}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            environ = Path(f"/proc/{name}/environ").read_bytes()
            status = Path(f"/proc/{name}/stat").read_bytes()
        except OSError:
            continue
        state = status[status.rfind(b")") + 2 :].split()[0]
        if needle in environ.split(b"\0") and state != b"Z":
            found.append(int(name))
    return found


def commands(root: Path, marker: str, **options: Any) -> ToolRegistry:
    registry = ToolRegistry()
    register_workspace_tools(
        registry, root, command_env={"DT_TEST_MARKER": marker}, command_timeout=20, **options
    )
    return registry


async def run(registry: ToolRegistry, **arguments: Any) -> ToolResult:
    context = ToolContext(tool_call_id="c1", tool_name="run_command")
    return await registry.invoke("run_command", arguments, context)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "script",
    ["sleep 1000 & echo started", "setsid sleep 1000 & echo started"],
    ids=["background", "setsid"],
)
async def test_what_a_command_started_is_gone_when_it_returns(tmp_path: Path, script: str):
    marker = uuid.uuid4().hex
    registry = commands(tmp_path, marker)
    done = await run(registry, command=["sh", "-c", f"{script}; echo $! > pid"])
    assert done.structured["exit_code"] == 0 and done.structured["stdout"] == "started\n"
    pid = int((tmp_path / "pid").read_text())
    assert not Path(f"/proc/{pid}").exists() or pid not in alive(marker)
    assert alive(marker) == []


@pytest.mark.timeout(60)
async def test_a_setsid_grandchild_holding_stdout_does_not_defeat_the_timeout(tmp_path: Path):
    marker = uuid.uuid4().hex
    registry = commands(tmp_path, marker)
    done = await run(
        registry,
        command=["sh", "-c", "setsid sh -c 'echo $$ > pid; sleep 1000' & sleep 1000"],
        timeout=1,
    )
    assert done.is_error and done.structured["timed_out"]
    assert done.structured["exit_code"] is None
    assert "timed out after 1s (killed, with everything it started)" in (done.content[0].text or "")
    assert (tmp_path / "pid").exists()  # the grandchild did start, in its own session
    assert alive(marker) == []


@pytest.mark.timeout(60)
async def test_a_double_forked_daemon_is_gone_too(tmp_path: Path):
    marker = uuid.uuid4().hex
    registry = commands(tmp_path, marker)
    daemon = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        time.sleep(1000)\n"
        "    os._exit(0)\n"
        "os.wait()\n"
        "print('detached')\n"
    )
    done = await run(registry, command=[sys.executable, "-c", daemon])
    assert done.structured["stdout"] == "detached\n"
    assert alive(marker) == []


@pytest.mark.timeout(60)
async def test_a_cancelled_call_kills_everything(tmp_path: Path):
    marker = uuid.uuid4().hex
    registry = commands(tmp_path, marker)
    task = asyncio.create_task(
        run(registry, command=["sh", "-c", "setsid sleep 1000 & echo up > up; sleep 1000"])
    )
    while not (tmp_path / "up").exists():
        await asyncio.sleep(0.05)
    while len(alive(marker)) < 2:  # the sleeps have started
        await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert alive(marker) == []


@pytest.mark.timeout(60)
async def test_output_over_the_bound_is_cut_with_a_note(tmp_path: Path):
    marker = uuid.uuid4().hex
    registry = commands(tmp_path, marker, max_output_bytes=1000)
    done = await run(registry, command=["sh", "-c", "yes flood"], timeout=1)
    stdout = done.structured["stdout"]
    assert done.structured["timed_out"] and done.structured["truncated"]
    assert done.structured["stdout_bytes"] > 100_000
    assert len(stdout) < 1100 and "bytes omitted ...]" in stdout
    assert stdout.startswith("flood\nflood\n")
    assert alive(marker) == []


WORKER = """
import asyncio, sys
from durable_tools import ToolContext, ToolRegistry
from durable_tools.workspace import register_workspace_tools

registry = ToolRegistry()
register_workspace_tools(registry, sys.argv[1], command_env={"DT_TEST_MARKER": sys.argv[2]})
command = ["sh", "-c", "setsid sleep 1000 & sleep 1000 & echo up > up; sleep 1000"]
context = ToolContext(tool_call_id="c1", tool_name="run_command")
asyncio.run(registry.invoke("run_command", {"command": command}, context))
"""


@pytest.mark.timeout(60)
async def test_a_command_dies_with_the_worker(tmp_path: Path):
    marker = uuid.uuid4().hex
    worker = await asyncio.create_subprocess_exec(
        sys.executable, "-c", WORKER, str(tmp_path), marker
    )
    while len(alive(marker)) < 4:  # the supervisor, sh and two sleeps
        assert worker.returncode is None
        await asyncio.sleep(0.05)
    worker.kill()  # SIGKILL: no cleanup code of the worker runs
    await worker.wait()
    while alive(marker):  # PR_SET_PDEATHSIG tells the supervisor; pytest-timeout bounds it
        await asyncio.sleep(0.05)
