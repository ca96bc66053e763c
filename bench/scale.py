"""Scale figures: a very long run (continue-as-new), and recovery after a server restart."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from pathlib import Path
from typing import Any

from temporalio.client import Client

from bench._common import Bench, free_port, make_registry, tool_steps
from bench._logs import expected_core_logs
from durable_tools import AgentConfig, DurableTools, Limits, RunStatus, build_worker
from durable_tools.server import DevServer
from durable_tools.tools import FileSystemArtifactStore

__all__ = ["measure_long_run", "measure_recovery"]


async def measure_long_run(bench: Bench, *, turns: int, after_events: int) -> dict[str, Any]:
    """One run of `turns` tool calls (one a turn): total time and history of each run."""
    script = bench.script(tool_steps(turns))
    config = AgentConfig(
        model=f"scripted:{script}",
        limits=Limits(max_turns=turns + 2, max_tool_calls=turns + 1),
        continue_as_new_after_events=after_events,
    )
    dt = DurableTools(bench.client, bench.durable_queue)
    started = time.perf_counter()
    run = await dt.start("long run", config=config)
    result = await run.result()
    seconds = time.perf_counter() - started
    if result.status != RunStatus.COMPLETED or result.tool_calls != turns:
        raise RuntimeError(f"long run {run.run_id} ended badly: {result}")
    events: list[int] = []
    sizes: list[int] = []
    executions = [e async for e in bench.client.list_workflows(f"WorkflowId = '{run.run_id}'")]
    for execution in sorted(executions, key=lambda e: e.start_time):
        handle = bench.client.get_workflow_handle(run.run_id, run_id=execution.run_id)
        history = await handle.fetch_history()
        events.append(len(history.events))
        sizes.append(sum(e.ByteSize() for e in history.events))
    return {
        "turns": turns,
        "continue_as_new_after_events": after_events,
        "seconds": seconds,
        "ms_per_turn": seconds * 1000 / turns,
        "runs_in_chain": len(events),
        "max_events_per_run": max(events),
        "max_history_kb_per_run": max(sizes) / 1024,
        "total_history_kb": sum(sizes) / 1024,
        # In chain order: flat from the second run on when nothing carried grows with age.
        "history_kb_per_run": [round(size / 1024, 1) for size in sizes],
    }


async def _running(client: Client, queue: str) -> int:
    query = f"TaskQueue = '{queue}' AND ExecutionStatus = 'Running'"
    return (await client.count_workflows(query)).count


async def measure_recovery(work_dir: Path, *, runs: int, calls: int) -> dict[str, Any]:
    """`runs` runs in flight; the dev server stops (SIGTERM) and starts again on its file.

    Reports how long the restart took, and the seconds from the server answering again
    until the first run completes and until every run has completed (the worker stays up
    and reconnects by itself).
    """
    server = DevServer(work_dir / "recovery-server", port=free_port(), headless=True)
    client = await server.start()
    queue = f"bench-recovery-{uuid.uuid4().hex[:8]}"
    script = work_dir / f"recovery-{queue}.json"
    script.write_text(json.dumps({"steps": tool_steps(calls)}))
    store = FileSystemArtifactStore(work_dir / "artifacts")
    config = AgentConfig(
        model=f"scripted:{script}",
        limits=Limits(max_turns=calls + 2, max_tool_calls=calls + 1),
    )
    try:
        async with build_worker(client, make_registry(), task_queue=queue, artifact_store=store):
            dt = DurableTools(client, queue)
            gate = asyncio.Semaphore(50)

            async def start(i: int) -> None:
                async with gate:
                    await dt.start("recover", config=config, run_id=f"{queue}-{i}")

            await asyncio.gather(*(start(i) for i in range(runs)))
            await asyncio.sleep(1.0)  # runs are mid-way: tools and model turns in flight
            before = await _running(client, queue)
            # The worker's polls and completions in flight fail until the server is back,
            # and the core warns about each retry: what this benchmark does on purpose.
            with expected_core_logs("tcp connect error", why="while the server restarted"):
                stopped = time.perf_counter()
                await server.stop()
                await server.start()
                ready = time.perf_counter()
                first: float | None = None
                deadline = time.monotonic() + 1800
                while (left := await _running(client, queue)) > 0:
                    if first is None and left < before:
                        first = time.perf_counter() - ready
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"{left} runs still running 30 min after the restart")
                    await asyncio.sleep(0.5)
                done = time.perf_counter() - ready
    finally:
        await server.stop()
    return {
        "runs": runs,
        "calls_per_run": calls,
        "running_at_stop": before,
        "restart_seconds": ready - stopped,
        "seconds_to_first_completion": first if first is not None else done,
        "seconds_until_all_completed": done,
    }
