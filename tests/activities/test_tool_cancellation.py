"""Cancellation reaches every non-local tool, sync or async, with or without a heartbeat
timeout; sync tools can heartbeat from their thread; subprocesses die with their call."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

from temporalio.client import Client
from temporalio.workflow import ActivityCancellationType

from durable_tools import DurableTools, RunStatus, ToolContext, ToolRegistry, ToolSpec
from durable_tools.protocol._options import activity_options_for
from support import answer, calls, running_worker, wait_for, write_script

# Long enough that a tool still running when a test gives up was never cancelled.
NEVER = 300


def _alive(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie, killed but not yet reaped, is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def _until(check: threading.Event, timeout: float = 20) -> None:
    await asyncio.wait_for(asyncio.to_thread(check.wait), timeout)


async def test_sync_tool_without_heartbeat_timeout_sees_cancel_and_stops(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    started, stopped = threading.Event(), threading.Event()
    registry = ToolRegistry()

    @registry.tool(read_only=True, start_to_close_timeout=NEVER + 60)
    def poll_forever(ctx: ToolContext) -> str:
        """Work in small steps until cancelled."""
        started.set()
        deadline = time.monotonic() + NEVER
        try:
            while time.monotonic() < deadline:
                ctx.raise_if_cancelled()
                time.sleep(0.05)
        finally:
            stopped.set()
        return "ran to the end"

    model = write_script(tmp_path, [calls(("p1", "poll_forever", {})), answer("never")])
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("work", model=model)
        await _until(started)
        await run.cancel("operator stopped it")
        await _until(stopped)  # before: no heartbeat, so the tool never learnt of the cancel
        result = await asyncio.wait_for(run.result(), 20)
        timeline = {r.call_id: r for r in await run.timeline()}
    assert result.status == RunStatus.CANCELLED
    assert timeline["p1"].status == "cancelled"


async def test_async_tool_without_heartbeat_timeout_is_cancelled(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    started, cancelled = threading.Event(), threading.Event()
    registry = ToolRegistry()

    @registry.tool(read_only=True, start_to_close_timeout=NEVER + 60)
    async def wait_forever(ctx: ToolContext) -> str:
        """Sleep until cancelled."""
        started.set()
        try:
            await asyncio.sleep(NEVER)
        except asyncio.CancelledError:
            assert ctx.cancelled  # the flag is set before the tool is interrupted
            cancelled.set()
            raise
        return "ran to the end"

    model = write_script(tmp_path, [calls(("w1", "wait_forever", {})), answer("never")])
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("work", model=model)
        await _until(started)
        await run.cancel()
        await _until(cancelled)
        result = await asyncio.wait_for(run.result(), 20)
    assert result.status == RunStatus.CANCELLED


async def test_subprocess_of_a_cancelled_sync_tool_is_killed_with_its_children(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    grandchild = tmp_path / "grandchild.pid"
    pids: list[int] = []
    exited = threading.Event()
    registry = ToolRegistry()

    @registry.tool(read_only=True, start_to_close_timeout=NEVER + 60)
    def run_command(ctx: ToolContext) -> str:
        """Run a command that would take minutes, with a background child of its own."""
        script = f"sleep {NEVER} & echo $! > {grandchild}; wait"
        process = ctx.popen(["sh", "-c", script])
        pids.append(process.pid)
        code = process.wait()  # returns once the cancel kills the group
        exited.set()
        return f"exit {code}"

    model = write_script(tmp_path, [calls(("r1", "run_command", {})), answer("never")])
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("work", model=model)
        run_started = await wait_for(run, lambda s: bool(s.running_tools) and grandchild.exists())
        assert run_started.running_tools
        for _ in range(100):  # the shell writes the file before the number is flushed
            if grandchild.read_text().strip():
                break
            await asyncio.sleep(0.05)
        child_pid = int(grandchild.read_text())
        assert _alive(pids[0]) and _alive(child_pid)
        await run.cancel()
        await _until(exited)
        await asyncio.wait_for(run.result(), 20)
    assert not _alive(pids[0])
    for _ in range(100):  # the orphaned grandchild is reparented, then reaped by init
        if not _alive(child_pid):
            break
        await asyncio.sleep(0.05)
    assert not _alive(child_pid)


async def test_sync_tool_can_report_progress_from_its_thread(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    registry = ToolRegistry()

    @registry.tool(read_only=True, heartbeat_timeout=5)
    def count(n: int, ctx: ToolContext) -> str:
        """Count to n, reporting each step."""
        for i in range(n):
            ctx.progress({"step": i})
            ctx.heartbeat()
        return f"counted to {n}"

    model = write_script(tmp_path, [calls(("c1", "count", {"n": 3})), answer("done")])
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("work", model=model)
        result = await asyncio.wait_for(run.result(), 20)
        timeline = {r.call_id: r for r in await run.timeline()}
    # Before: every attempt failed with "RuntimeError: no running event loop".
    assert result.status == RunStatus.COMPLETED
    assert timeline["c1"].status == "completed" and timeline["c1"].attempts == 1
    assert timeline["c1"].result == "counted to 3"


def test_every_tool_waits_for_its_cancellation_to_complete() -> None:
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    def plain() -> str:
        """A tool without options."""
        return "ok"

    @registry.tool(read_only=True, local=True)
    def quick() -> str:
        """A local tool."""
        return "ok"

    specs: list[ToolSpec] = [registry.get("plain").spec, registry.get("quick").spec]
    for spec in specs:
        options = activity_options_for(spec)
        assert options.cancellation_type == ActivityCancellationType.WAIT_CANCELLATION_COMPLETED


async def test_run_records_a_cancel_only_once_the_tool_has_stopped(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    started, seen, release = threading.Event(), threading.Event(), threading.Event()
    registry = ToolRegistry()

    @registry.tool(read_only=True, start_to_close_timeout=NEVER + 60)
    def slow_to_stop(ctx: ToolContext) -> str:
        """Notice the cancel, then clean up until the test says so."""
        started.set()
        while not ctx.cancelled:
            time.sleep(0.05)
        seen.set()
        release.wait(NEVER)
        ctx.raise_if_cancelled()
        return "unreachable"

    model = write_script(tmp_path, [calls(("s1", "slow_to_stop", {})), answer("never")])
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("work", model=model)
        await _until(started)
        await run.cancel()
        await _until(seen)
        # The tool is still cleaning up, within the run's grace period (it saw the cancel
        # at its next heartbeat, about 2 s): the run must not call it cancelled yet.
        cleaning = {r.call_id: r.status for r in await run.timeline()}
        release.set()
        result = await asyncio.wait_for(run.result(), 20)
        stopped = {r.call_id: r.status for r in await run.timeline()}
    assert cleaning["s1"] == "running"
    assert result.status == RunStatus.CANCELLED and stopped["s1"] == "cancelled"
