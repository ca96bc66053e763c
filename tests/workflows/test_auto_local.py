"""Tools chosen to run as local activities by default, on a real Temporal dev server.

A local activity leaves a MARKER_RECORDED event in history instead of the
ACTIVITY_TASK_SCHEDULED / STARTED / COMPLETED of a regular one; the tests read which
tools ran which way from there.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowHistory

from durable_tools import AgentConfig, DurableTools, ExecutionStrategy, RunStatus, ToolRegistry
from durable_tools.flows import FlowNode
from durable_tools.tools._catalog_pack import CATALOG_PACKED_ACTIVITY
from support import (
    answer,
    assert_not_wedged,
    calls,
    local_activity_types,
    running_worker,
    scheduled_activities,
    write_script,
)

sys.path.insert(0, str(Path(__file__).parents[1] / "reliability"))
from subprocess_workers import WorkerProcess, read_jsonl

WORKER = Path(__file__).with_name("auto_local_worker.py")


def local_activities(history: WorkflowHistory) -> list[str]:
    """The tools a history ran as local activities (the run's catalog is one too)."""
    return [t for t in local_activity_types(history) if t != CATALOG_PACKED_ACTIVITY]


async def test_only_a_read_only_short_plain_tool_runs_locally_by_default(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    registry = ToolRegistry()
    ran: list[str] = []

    def tool(name: str, **options: Any) -> None:
        def body(n: int) -> str:
            ran.append(name)
            return f"{name} {n}"

        body.__doc__ = f"The {name} tool."
        registry.register(body, name=name, **options)

    tool("quick_read", read_only=True, start_to_close_timeout=5)  # the one chosen
    tool("writer", start_to_close_timeout=5)
    tool("limited_read", read_only=True, start_to_close_timeout=5, max_concurrent=1)
    tool("long_read", read_only=True, start_to_close_timeout=30)
    tool("forced_regular", read_only=True, start_to_close_timeout=5, local=False)
    names = ["quick_read", "writer", "limited_read", "long_read", "forced_regular"]
    model = write_script(
        tmp_path,
        [calls(*((f"c{i}", name, {"n": i}) for i, name in enumerate(names))), answer("done")],
    )
    config = AgentConfig(model=model, strategy=ExecutionStrategy(mode="sequential"))
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("read", config=config)
        result = await asyncio.wait_for(run.result(), 60)
        history = await run.handle.fetch_history()
        timeline = {record.call_id: record for record in await run.timeline()}  # a query
        await assert_not_wedged(run.handle)

    assert result.status == RunStatus.COMPLETED and result.final_answer == "done"
    assert sorted(ran) == sorted(names)  # every tool ran once
    assert local_activities(history) == ["quick_read"]
    regular = scheduled_activities(history)
    assert "quick_read" not in regular
    assert {"writer", "limited_read", "long_read", "forced_regular"} <= set(regular)
    assert timeline["c0"].status == "completed" and timeline["c0"].result == "quick_read 0"


async def test_a_flow_node_of_a_chosen_tool_runs_locally_in_the_flow(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    registry = ToolRegistry()

    @registry.tool(read_only=True, start_to_close_timeout=5)
    def quick_read(key: str) -> str:
        """Read a value."""
        return f"value of {key}"

    @registry.tool(read_only=True)  # the default timeout: regular
    def shout(text: str) -> str:
        """Upper-case a text."""
        return text.upper()

    registry.flow(
        "read_and_shout",
        "Read a value and shout it.",
        nodes={
            "get": FlowNode(tool="quick_read", arguments={"key": "$args.key"}),
            "up": FlowNode(tool="shout", arguments={"text": "$nodes.get.output"}),
        },
    )
    model = write_script(tmp_path, [calls(("c1", "read_and_shout", {"key": "k"})), answer("done")])
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("go", model=model)
        result = await asyncio.wait_for(run.result(), 60)
        child = client.get_workflow_handle(f"{run.run_id}.c1")
        history = await child.fetch_history()
        timeline = {record.call_id: record for record in await run.timeline()}  # a query
        for handle in (run.handle, child):
            await assert_not_wedged(handle)

    assert result.status == RunStatus.COMPLETED
    assert timeline["c1"].status == "completed" and "VALUE OF K" in (timeline["c1"].result or "")
    assert local_activities(history) == ["quick_read"]
    assert scheduled_activities(history) == ["shout"]


def attempts(work: Path) -> list[dict[str, Any]]:
    return read_jsonl(work / "attempts.jsonl")


@pytest.mark.slow  # ~16 s idle, more under load: the dead worker's workflow task times out first
async def test_a_worker_killed_mid_local_tool_the_run_completes_after_restart(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    address = client.service_client.config.target_host
    work = tmp_path / "work"
    work.mkdir()
    model = write_script(tmp_path, [calls(("r1", "slow_read", {"key": "k"})), answer("done")])
    first = WorkerProcess(address, task_queue, work, script=WORKER)
    second: WorkerProcess | None = None
    try:
        await first.ready()
        run = await DurableTools(client, task_queue).start("read", model=model)
        deadline = time.monotonic() + 30
        while not attempts(work):  # the tool body is running on the first worker
            assert time.monotonic() < deadline, "the tool never started"
            await asyncio.sleep(0.05)
        first.kill()
        second = WorkerProcess(address, task_queue, work, script=WORKER)
        await second.ready()
        result = await asyncio.wait_for(run.result(), 90)
        history = await run.handle.fetch_history()
        timeline = {record.call_id: record for record in await run.timeline()}  # a query
        await assert_not_wedged(run.handle)
    finally:
        if second is not None:
            second.stop()
        first.stop()

    assert result.status == RunStatus.COMPLETED and result.final_answer == "done"
    pids = [a["pid"] for a in attempts(work)]
    # Read-only, so it may run again: it did, on the second worker, and the run went on.
    assert pids[0] == first.process.pid and pids[-1] == second.process.pid
    # The tool ran as a local activity (its catalog read again as one too: the turn after
    # the kill came more than a second after the last, and the run asked the new worker).
    tools = [name for name in local_activities(history) if name != "durable_tools.catalog_update"]
    assert tools == ["slow_read"]
    assert "slow_read" not in scheduled_activities(history)
    assert timeline["r1"].status == "completed" and timeline["r1"].result == "value of k"
