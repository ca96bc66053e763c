"""Code mode: worker processes killed (SIGKILL) in the middle of a script."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from subprocess_workers import WorkerProcess, read_jsonl, wait_until
from temporalio.client import Client

from durable_tools import AgentConfig, CodeMode, DurableTools, RunStatus
from support import answer, assert_not_wedged, calls, scheduled_activities, write_script

CODE_MODE_WORKER = Path(__file__).with_name("code_mode_worker.py")

SCRIPT = """
total = await count(n=1)
await refund(amount=5)
total += await slow(n=10)
total += await count(n=2)
total
"""


@pytest.mark.slow  # ~25 s: two dead sticky queues and a heartbeat timeout
async def test_a_script_resumes_on_other_workers_without_repeating_a_host_call(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    address = client.service_client.config.target_host
    work = tmp_path / "work"
    model = write_script(
        tmp_path, [calls(("s1", "run_script", {"script": SCRIPT})), answer("done")]
    )
    config = AgentConfig(model=model, code_mode=CodeMode())
    workers = [WorkerProcess(address, task_queue, work, script=CODE_MODE_WORKER)]
    try:
        await workers[0].ready()
        run = await DurableTools(client, task_queue).start("work", config=config)
        # Killed between host calls: the script waits for a person, its state is stored.
        snapshot = None
        for _ in range(300):
            snapshot = await run.status()
            if snapshot.pending_approvals:
                break
            await asyncio.sleep(0.1)
        assert snapshot is not None and snapshot.pending_approvals[0].call_id == "s1/2"
        workers[0].kill()
        workers.append(WorkerProcess(address, task_queue, work, script=CODE_MODE_WORKER))
        await workers[1].ready()
        hash_ = snapshot.pending_approvals[0].arguments_hash
        await run.approve("s1/2", decider="alice", arguments_hash=hash_)
        # Killed during a host call: `slow` runs on the second worker.
        await wait_until(
            lambda: any(c["tool"] == "slow" for c in read_jsonl(work / "calls.jsonl")),
            60,
            "the slow host call",
        )
        workers[1].kill()
        workers.append(WorkerProcess(address, task_queue, work, script=CODE_MODE_WORKER))
        await workers[2].ready()
        result = await asyncio.wait_for(run.result(), 90)
        reply = next(m for m in await run.conversation() if m.tool_call_id == "s1")
        history = await run.handle.fetch_history()
        await assert_not_wedged(run.handle, allowed=3)
    finally:
        for worker in workers:
            if worker.process.poll() is None:
                worker.stop()

    assert result.status == RunStatus.COMPLETED
    assert "result: 13" in (reply.content or "")
    seen = read_jsonl(work / "calls.jsonl")
    by_tool: dict[str, list[dict[str, object]]] = {}
    for call in seen:
        by_tool.setdefault(str(call["tool"]), []).append(call)
    key = f"{run.run_id}/s1"
    # Each finished host call ran once: none was repeated by the workers that took over.
    assert [c["key"] for c in by_tool["count"]] == [f"{key}/1", f"{key}/4"]
    assert [c["key"] for c in by_tool["refund"]] == [f"{key}/2"]
    assert by_tool["count"][0]["pid"] == workers[0].pid
    assert by_tool["refund"][0]["pid"] == workers[1].pid
    # The call cut by the kill was retried (same key) on the third worker; effect once.
    assert [(c["key"], c["attempt"]) for c in by_tool["slow"]] == [(f"{key}/3", 1), (f"{key}/3", 2)]
    assert by_tool["slow"][1]["pid"] == workers[2].pid
    assert by_tool["count"][1]["pid"] == workers[2].pid
    assert len(list((work / "effects").iterdir())) == 1
    scheduled = scheduled_activities(history)
    assert [scheduled.count(t) for t in ("count", "refund", "slow")] == [2, 1, 1]
