"""A worker process killed (SIGKILL) in the middle of a heartbeating tool."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from subprocess_workers import WorkerProcess, read_jsonl, wait_until
from temporalio.client import Client

from durable_tools import DurableTools, RunStatus
from support import answer, assert_not_wedged, calls, scheduled_activities, write_script

SENTINEL = "sk-CRASH-SENTINEL-5d1e0b"


@pytest.mark.slow  # ~18 s: heartbeat timeout, retry, a new process and the dead sticky queue
@pytest.mark.parametrize("tool", ["long_step", "long_step_sync"])  # async, and sync in a thread
async def test_worker_killed_mid_tool_resumes_with_same_key_and_applies_once(
    client: Client, task_queue: str, tmp_path: Path, tool: str
) -> None:
    address = client.service_client.config.target_host
    work = tmp_path / "work"
    env = {"DURABLE_TOOLS_SECRET_API_KEY": SENTINEL}
    model = write_script(
        tmp_path,
        [
            calls(("s1", tool, {"steps": 12})),
            calls(("a1", "call_api", {"path": "/fail"})),
            answer("done"),
        ],
    )
    first = WorkerProcess(address, task_queue, work, env=env)
    second: WorkerProcess | None = None
    try:
        await first.ready()
        run = await DurableTools(client, task_queue).start("work", model=model)
        # Kill once the tool has run a few steps: its heartbeats (throttled by the SDK to
        # 0.8 x heartbeat_timeout) have then carried progress details to the server.
        await wait_until(
            lambda: len(read_jsonl(work / "progress.jsonl")) >= 7, 30, "the tool's progress"
        )
        first.kill()
        killed_at = len(read_jsonl(work / "progress.jsonl"))
        second = WorkerProcess(address, task_queue, work, env=env)
        await second.ready()
        result = await asyncio.wait_for(run.result(), 60)
        timeline = {r.call_id: r for r in await run.timeline()}
        history = await run.handle.fetch_history()
        await assert_not_wedged(run.handle)
    finally:
        if second is not None:
            second.stop()
        if first.process.poll() is None:
            first.stop()

    assert result.status == RunStatus.COMPLETED and result.final_answer == "done"
    attempts = read_jsonl(work / "attempts.jsonl")
    assert [a["attempt"] for a in attempts] == [1, 2]
    key = f"{run.run_id}/s1"
    assert {a["key"] for a in attempts} == {key}  # the same idempotency key on both
    assert attempts[0]["pid"] == first.pid and attempts[1]["pid"] == second.pid
    assert attempts[0]["heartbeat_details"] is None
    # The second attempt started from what the first last reported.
    resumed = attempts[1]["heartbeat_details"]
    assert isinstance(resumed, dict) and 0 <= resumed["step"] < killed_at
    assert len(read_jsonl(work / "applied.jsonl")) == 1  # the effect happened once
    assert len(list((work / "effects").iterdir())) == 1
    assert timeline["s1"].status == "completed" and timeline["s1"].attempts == 2
    assert f"resumed at {resumed['step'] + 1}" in (timeline["s1"].result or "")
    assert scheduled_activities(history).count(tool) == 1  # one activity, retried

    # The failing call's message carried the secret: scrubbed from history and logs.
    assert timeline["a1"].status == "failed"
    assert SENTINEL not in history.to_json()
    for worker in (first, second):
        log = worker.stderr()
        assert "Completing activity" in log  # DEBUG logs were captured
        assert SENTINEL not in log
