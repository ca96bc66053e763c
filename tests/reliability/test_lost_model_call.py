"""A model call whose worker died is retried within seconds, not after the model timeout.

The model activity heartbeats while the provider is thinking; with its worker SIGKILLed
mid-call, the server notices the missing heartbeats after `model_heartbeat_seconds` and
another worker retries the call, long before `model_timeout_seconds` (300 s) runs out.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from subprocess_workers import WorkerProcess, wait_until
from temporalio.api.enums.v1 import TimeoutType
from temporalio.client import Client

from durable_tools import AgentConfig, DurableTools, RunStatus
from fake_openai import CannedResponse, FakeOpenAIServer, RecordedRequest, chat_completion
from support import assert_not_wedged


@pytest.mark.slow  # ~20 s: a worker process, its death, the heartbeat timeout, a second one
async def test_a_model_call_lost_with_its_worker_is_retried_after_the_heartbeat_timeout(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    def answer(request: RecordedRequest) -> CannedResponse:
        # The first call hangs (its worker is killed meanwhile); the retry answers at once.
        first = len(server.requests) == 1
        return CannedResponse(body=chat_completion(content="recovered"), delay=20 if first else 0)

    server = FakeOpenAIServer(answer)
    address = client.service_client.config.target_host
    work = tmp_path / "work"
    config = AgentConfig(
        model="openai:gpt-test", model_heartbeat_seconds=2, model_timeout_seconds=300
    )
    with server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "test-key"}
        first = WorkerProcess(address, task_queue, work, env=env)
        second: WorkerProcess | None = None
        try:
            await first.ready()
            run = await DurableTools(client, task_queue).start("think hard", config=config)
            await wait_until(lambda: len(server.requests) >= 1, 30, "the first model call")
            first.kill()
            second = WorkerProcess(address, task_queue, work, env=env)
            await second.ready()
            result = await asyncio.wait_for(run.result(), 90)
            history = await run.handle.fetch_history()
            await assert_not_wedged(run.handle)
        finally:
            if second is not None:
                second.stop()
            if first.process.poll() is None:
                first.stop()
    assert result.status == RunStatus.COMPLETED and result.final_answer == "recovered"
    assert len(server.requests) == 2
    started = [
        e.activity_task_started_event_attributes
        for e in history.events
        if e.HasField("activity_task_started_event_attributes")
    ]
    # The engine retried the lost call inside one activity: the started event of its
    # second attempt names why the first one ended, a missed heartbeat.
    retry = next(a for a in started if a.attempt == 2)
    timeout = retry.last_failure.timeout_failure_info.timeout_type
    assert timeout == TimeoutType.TIMEOUT_TYPE_HEARTBEAT
