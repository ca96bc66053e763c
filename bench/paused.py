"""Memory of paused runs: a worker's RSS with many runs waiting on approval.

The worker runs in its own process (bench/paused_worker.py) with a small workflow cache,
so most paused runs are evicted: they live in the server's history, not in the worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from temporalio.client import Client

from durable_tools import AgentConfig, DurableTools

__all__ = ["measure_paused"]


class _WorkerProcess:
    def __init__(self, address: str, queue: str, max_cached: int, artifacts: Path) -> None:
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bench.paused_worker",
                address,
                queue,
                str(max_cached),
                str(artifacts),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).resolve().parent.parent,
        )

    async def line(self) -> str:
        assert self.process.stdout is not None
        text = await asyncio.to_thread(self.process.stdout.readline)
        if not text:
            raise RuntimeError(f"paused worker exited with code {self.process.wait()}")
        return text.strip()

    async def rss_mb(self) -> float:
        assert self.process.stdin is not None
        self.process.stdin.write("\n")
        self.process.stdin.flush()
        return int(await self.line()) / 1024

    def stop(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


STALL_SECONDS = 180
"""How long the paused-runs benchmark waits for the next run to pause before it fails."""


async def _count(client: Client, query: str) -> int:
    return (await client.count_workflows(query)).count


async def measure_paused(
    client: Client, address: str, work_dir: Path, *, runs: int, max_cached: int
) -> dict[str, Any]:
    queue = f"bench-paused-{uuid.uuid4().hex[:8]}"
    script = work_dir / f"paused-{queue}.json"
    script.write_text(
        json.dumps(
            {
                "steps": [
                    {"tool_calls": [{"id": "t1", "name": "transfer", "arguments": {"amount": 5}}]},
                    {"text": "done"},
                ]
            }
        )
    )
    worker = _WorkerProcess(address, queue, max_cached, work_dir / "artifacts")
    dt = DurableTools(client, queue)
    ids: list[str] = []
    try:
        assert await worker.line() == "ready"
        await asyncio.sleep(2)
        idle = min([await worker.rss_mb() for _ in range(3)])
        gate = asyncio.Semaphore(50)
        config = AgentConfig(name="paused-bench", model=f"scripted:{script}")

        async def start(i: int) -> None:
            async with gate:
                run = await dt.start("pay", config=config, run_id=f"{queue}-{i}")
                ids.append(run.run_id)

        started = time.perf_counter()
        await asyncio.gather(*(start(i) for i in range(runs)))
        query = f"TaskQueue = '{queue}' AND AgentStatus = 'awaiting_approval'"
        # A stall, not a slow machine, is the failure: give up only when no further run
        # has paused for STALL_SECONDS (10,000 runs take a quarter of an hour on 2 cores).
        closed = f"TaskQueue = '{queue}' AND ExecutionStatus != 'Running'"
        progress_at, last = time.monotonic(), 0
        while (paused := await _count(client, query)) < runs:
            if ended := await _count(client, closed):
                raise RuntimeError(f"{ended} of {runs} runs ended before pausing ({closed!r})")
            if paused > last:
                progress_at, last = time.monotonic(), paused
            elif time.monotonic() - progress_at > STALL_SECONDS:
                raise RuntimeError(
                    f"only {paused} of {runs} runs paused; none more in {STALL_SECONDS} s"
                )
            await asyncio.sleep(1)
        seconds_to_pause = time.perf_counter() - started
        await asyncio.sleep(2)  # let the worker settle (pollers, evictions)
        loaded = min([await worker.rss_mb() for _ in range(3)])
        # What an operator waits for: `durable-tools pending` lists every waiting run.
        listed = time.perf_counter()
        waiting = await dt.pending(limit=runs)
        seconds_to_list = time.perf_counter() - listed
        if len(waiting) != runs:
            raise RuntimeError(f"pending listed {len(waiting)} of {runs} paused runs")
    finally:
        worker.stop()
        # Leave no run waiting on a shared server.
        gate = asyncio.Semaphore(50)

        async def end(run_id: str) -> None:
            async with gate:
                with contextlib.suppress(Exception):
                    await client.get_workflow_handle(run_id).terminate("benchmark over")

        await asyncio.gather(*(end(i) for i in ids))
    return {
        "runs": runs,
        "max_cached_workflows": max_cached,
        "idle_rss_mb": idle,
        "paused_rss_mb": loaded,
        "mb_per_paused_run": (loaded - idle) / runs,
        "seconds_to_pause_all": seconds_to_pause,
        "seconds_to_list_pending": seconds_to_list,
    }
