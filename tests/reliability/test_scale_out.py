"""Three worker processes on one task queue share fifty runs."""

from __future__ import annotations

import asyncio
import collections
from pathlib import Path

import pytest
from subprocess_workers import WorkerProcess, read_jsonl
from temporalio.client import Client

from durable_tools import DurableTools, RunStatus
from support import answer, assert_not_wedged, calls, write_script

RUNS = 50


@pytest.mark.timeout(300)  # 50 runs on 3 processes: generous on a loaded 2-core machine
async def test_three_workers_share_fifty_runs(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    address = client.service_client.config.target_host
    work = tmp_path / "work"
    model = write_script(
        tmp_path,
        [calls(("w1", "whoami", {"n": 1})), calls(("w2", "whoami", {"n": 2})), answer("done")],
    )
    workers = [WorkerProcess(address, task_queue, work) for _ in range(3)]
    try:
        await asyncio.gather(*(w.ready() for w in workers))
        dt = DurableTools(client, task_queue)
        runs = await asyncio.gather(*(dt.start(f"run {i}", model=model) for i in range(RUNS)))
        results = await asyncio.wait_for(asyncio.gather(*(r.result() for r in runs)), 120)
        timelines = await asyncio.gather(*(r.timeline() for r in runs))
        for run in runs:
            await assert_not_wedged(run.handle, allowed=0)
    finally:
        for worker in workers:
            worker.stop()
    assert [r.status for r in results] == [RunStatus.COMPLETED] * RUNS
    pids = {w.pid for w in workers}
    by_pid = collections.Counter(r["pid"] for r in read_jsonl(work / "pids.jsonl"))
    assert sum(by_pid.values()) == 2 * RUNS  # every call ran exactly once
    assert set(by_pid) == pids, by_pid  # each process handled some
    seen = collections.Counter(t.result for timeline in timelines for t in timeline)
    assert {f"pid {p}" for p in pids} == set(seen)
