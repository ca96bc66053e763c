"""Two worker processes that share nothing but Temporal and an S3 bucket run one agent.

Each worker has its own `DURABLE_TOOLS_HOME` (so its own local files); only
`DURABLE_TOOLS_ARTIFACTS=s3://...` is common. The run is handed from one worker to the
other between turns, so every model turn after the first reads a conversation snapshot
another process wrote: with per-machine file stores that is `ConversationSnapshotMissing`
(the workflow then resends the whole conversation); with the shared store it never is.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from s3_worker import report_text
from temporalio.client import Client, WorkflowHistory

from durable_tools import AgentConfig, AgentRun, ApprovalPolicy, DurableTools, RunStatus
from durable_tools._activities._types import MODEL_ACTIVITY, SNAPSHOT_MISSING
from durable_tools.cli import main
from support import answer, assert_not_wedged, calls, wait_for, write_script

WORKER = Path(__file__).with_name("s3_worker.py")
ROWS = 40_000  # about 500 KB of CSV: far over the 16 KB output limit


class Worker:
    """One worker process with a home of its own."""

    def __init__(self, address: str, task_queue: str, home: Path, env: dict[str, str]) -> None:
        home.mkdir(parents=True, exist_ok=True)
        self.stderr_path = home / "worker.stderr"
        self._stderr = open(self.stderr_path, "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [sys.executable, str(WORKER), address, task_queue],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env={**os.environ, **env, "DURABLE_TOOLS_HOME": str(home)},
        )

    async def ready(self) -> None:
        assert self.process.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(self.process.stdout.readline), 60)
        assert line.strip() == b"ready", self.stderr_path.read_text(errors="replace")[-2000:]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self._stderr.close()


def model_identities(history: WorkflowHistory) -> list[str]:
    """The worker identity (`pid@host`) that started each model activity, in order."""
    scheduled: dict[int, str] = {}
    found = []
    for event in history.events:
        if event.HasField("activity_task_scheduled_event_attributes"):
            scheduled[event.event_id] = (
                event.activity_task_scheduled_event_attributes.activity_type.name
            )
        elif event.HasField("activity_task_started_event_attributes"):
            attrs = event.activity_task_started_event_attributes
            if scheduled.get(attrs.scheduled_event_id) == MODEL_ACTIVITY:
                found.append(attrs.identity)
    return found


def snapshot_misses(history: WorkflowHistory) -> list[str]:
    """Messages of every model activity that failed for a missing snapshot."""
    return [
        event.activity_task_failed_event_attributes.failure.message
        for event in history.events
        if event.HasField("activity_task_failed_event_attributes")
        and event.activity_task_failed_event_attributes.failure.application_failure_info.type
        == SNAPSHOT_MISSING
    ]


async def approve_next(run: AgentRun, call_id: str) -> None:
    await wait_for(run, lambda s: any(a.call_id == call_id for a in s.pending_approvals), 60)
    await run.approve(call_id)


@pytest.mark.slow
async def test_two_workers_share_only_temporal_and_s3(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    s3_url: str,
    s3_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    address = client.service_client.config.target_host
    env = {**s3_env, "DURABLE_TOOLS_ARTIFACTS": s3_url}
    model = write_script(
        tmp_path,
        [
            calls(("c1", "report", {"rows": ROWS})),
            calls(("c2", "report", {"rows": 10})),
            answer("done"),
        ],
    )
    # Every call waits for approval: the test moves the run between workers meanwhile.
    config = AgentConfig(model=model, approval=ApprovalPolicy(require="all"))
    run = await DurableTools(client, task_queue).start("two reports", config=config)

    first = Worker(address, task_queue, tmp_path / "machine-a", env)
    try:
        await first.ready()
        await wait_for(run, lambda s: bool(s.pending_approvals), 60)  # turn 1 on A
    finally:
        first.stop()
    second = Worker(address, task_queue, tmp_path / "machine-b", env)
    try:
        await second.ready()
        await approve_next(run, "c1")  # report on B (to S3), turn 2 on B reads A's snapshot
        await approve_next(run, "c2")
    finally:
        second.stop()
    third = Worker(address, task_queue, tmp_path / "machine-a", env)  # A again, fresh cache
    try:
        await third.ready()
        result = await asyncio.wait_for(run.result(), 60)  # turn 3 reads B's snapshot
        conversation = await run.conversation()
    finally:
        third.stop()

    assert result.status == RunStatus.COMPLETED and result.final_answer == "done"
    history = await run.handle.fetch_history()
    await assert_not_wedged(run.handle, allowed=0)
    assert snapshot_misses(history) == []
    identities = model_identities(history)
    assert [int(i.split("@")[0]) for i in identities] == [
        first.process.pid,
        second.process.pid,
        third.process.pid,
    ]
    # Neither machine kept anything of the run on its own disk.
    for home in ("machine-a", "machine-b"):
        assert not (tmp_path / home / "artifacts").exists()

    [notice] = [m.content for m in conversation if m.role == "tool" and "artifact" in m.content]
    match = re.search(r"stored as artifact (s3://\S+)", notice)
    assert match, notice
    uri = match.group(1)
    expected = report_text(ROWS).encode()
    assert await run.artifact(uri) == expected

    # The command line, in a process of its own with only the endpoint and credentials.
    monkeypatch.delenv("DURABLE_TOOLS_ARTIFACTS", raising=False)
    target = tmp_path / "report.csv"
    code = await asyncio.to_thread(main, ["artifact", "get", uri, "-o", str(target)])
    assert code == 0 and target.read_bytes() == expected
