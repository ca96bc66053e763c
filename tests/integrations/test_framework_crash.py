"""A worker process running an agent framework (Pydantic AI, the OpenAI Agents SDK) on
durable-tools' runtime is SIGKILLed while the agent's tool call waits for a person; a new
worker process takes over, the CLI lists and approves the call, and the tool runs exactly
once (its effects counted in a file)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from temporalio import workflow
from temporalio.client import Client

with workflow.unsafe.imports_passed_through():
    from crash_hosts import EFFECTS, CrashPayerWorkflow
    from crash_openai_host import OpenAICrashPayerWorkflow

    from cli_support import cli, cli_env, cli_json  # noqa: F401  (a fixture)
    from durable_tools.client import AgentRun
    from fake_openai import FakeOpenAIServer
    from framework_support import (
        PREFIX,
        openai_agents_client,
        pydantic_ai_client,
        responses_call_then_report,
    )
    from reliability.subprocess_workers import WorkerProcess, read_jsonl
from support import assert_not_wedged, wait_for

FRAMEWORK_WORKER = Path(__file__).with_name("framework_worker.py")


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(responses_call_then_report("pay", '{"order_id": "A1"}', "p1")) as server:
        yield server


async def _listed_with_calls(capsys: pytest.CaptureFixture[str], host_id: str) -> Any:
    """The host's entry in `durable-tools pending --json` once a worker reports its calls."""
    for _ in range(30):
        listed = await cli_json(capsys, "pending")
        entry = next((e for e in listed if e["run_id"] == host_id), None)
        if entry is not None and entry.get("approvals"):
            return entry
        await asyncio.sleep(1)
    raise AssertionError(f"pending never listed the calls of {host_id}")


@pytest.mark.usefixtures("cli_env")
@pytest.mark.parametrize("framework", ["pydantic_ai", "openai_agents"])
async def test_an_agent_survives_a_sigkill_while_its_call_waits(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    fake_openai: FakeOpenAIServer,
    framework: str,
) -> None:
    address = client.service_client.config.target_host
    env = {"FRAMEWORK": framework, "FAKE_OPENAI_URL": fake_openai.base_url}
    work = tmp_path / "work"

    def worker() -> WorkerProcess:
        return WorkerProcess(address, task_queue, work, env=env, script=FRAMEWORK_WORKER)

    host: Any = CrashPayerWorkflow if framework == "pydantic_ai" else OpenAICrashPayerWorkflow
    workers = [worker()]
    try:
        await workers[0].ready(60)
        starter = pydantic_ai_client if framework == "pydantic_ai" else openai_agents_client
        handle = await starter(client).start_workflow(
            host.run, "pay A1", id=f"crash-{framework}-{task_queue}", task_queue=task_queue
        )
        run = AgentRun(client, handle.id, prefix=PREFIX)
        waiting = await wait_for(run, lambda s: bool(s.pending_approvals), 90)
        [approval] = waiting.pending_approvals
        workers[0].kill()  # while the call waits: no shutdown, its cached run is gone with it
        workers.append(worker())
        await workers[1].ready(60)
        # The new process answers for the run: `pending` lists it with its hash and prefix.
        # (Until the server gives up on the dead process's sticky queue, queries time out.)
        entry = await _listed_with_calls(capsys, handle.id)
        assert entry["prefix"] == PREFIX
        assert [a["arguments_hash"] for a in entry["approvals"]] == [approval.arguments_hash]
        assert not (work / EFFECTS).exists()
        code, _, err = await cli(
            capsys, "approve", handle.id, approval.call_id, "--prefix", PREFIX,
            "--hash", approval.arguments_hash, "--as", "alice",
        )  # fmt: skip
        assert code == 0, err
        output = await handle.result()
    finally:
        for process in workers:
            process.stop()
    assert output == "I read: paid A1"
    effects = read_jsonl(work / EFFECTS)
    assert [e["order_id"] for e in effects] == ["A1"]
    assert effects[0]["pid"] == workers[1].pid
    await assert_not_wedged(handle)
