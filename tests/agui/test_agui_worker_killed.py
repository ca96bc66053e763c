"""A worker SIGKILLed while the answer streams through the AG-UI endpoint: the AG-UI run goes
on, the retried model call streams its message again as a new text message, and the run
ends with the whole answer; the chat loses nothing."""

from __future__ import annotations

import sys
import threading
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from agui_support import of_type, run_input, sse_events, user
from temporalio.client import Client

from durable_tools import AgentConfig, DurableTools
from durable_tools.agui import AguiConfig, create_agui_app
from durable_tools.inbox import AuthConfig, InboxServer, TokenStore, add_token
from fake_openai import CannedResponse, FakeOpenAIServer, RecordedRequest, chat_stream

sys.path.insert(0, str(Path(__file__).parents[1] / "reliability"))
from subprocess_workers import WorkerProcess

LOST = ["The weather ", "in Rome "]
ANSWER = "The weather in Paris is 18C and sunny."


@pytest.mark.slow  # ~25 s: a worker process, its death, the heartbeat timeout, a second one
async def test_a_worker_killed_mid_answer_loses_nothing_of_the_chat(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    held = threading.Event()

    def answer(request: RecordedRequest) -> CannedResponse:
        if len(server.requests) == 1:  # the doomed attempt: never finishes
            return CannedResponse(sse=[*chat_stream(LOST)[:3], held])
        return CannedResponse(sse=chat_stream(["The weather ", "in Paris ", "is 18C and sunny."]))

    server = FakeOpenAIServer(answer)
    tokens = tmp_path / "tokens.json"
    alice = add_token(tokens, "alice")
    config = AguiConfig(
        agent=AgentConfig(model="openai:gpt-test", model_heartbeat_seconds=2),
        auth=AuthConfig(TokenStore(tokens)),
        poll_interval=0.1,
    )
    endpoint = InboxServer(create_agui_app(DurableTools(client, task_queue), config), port=0)
    address = client.service_client.config.target_host
    work = tmp_path / "work"
    seen: list[dict[str, Any]] = []
    with server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test-agui-kill-0123"}
        first = WorkerProcess(address, task_queue, work, env=env)
        second: WorkerProcess | None = None
        await endpoint.start()
        try:
            await first.ready()
            body = run_input(f"t-{uuid.uuid4().hex[:8]}", [user("Weather?")])
            headers = {"authorization": f"Bearer {alice}", "content-type": "application/json"}
            async with (
                httpx.AsyncClient(timeout=120) as http,
                http.stream("POST", f"{endpoint.url}/", json=body, headers=headers) as response,
            ):
                streamed = ""
                async for line in response.aiter_lines():
                    for event in sse_events(line):
                        seen.append(event)
                        if event["type"] == "TEXT_MESSAGE_CONTENT":
                            streamed += event["delta"]
                            if streamed == "".join(LOST) and second is None:
                                first.kill()  # SIGKILL, mid-answer
                                second = WorkerProcess(address, task_queue, work, env=env)
                                await second.ready()
        finally:
            held.set()
            await endpoint.stop()
            if second is not None:
                second.stop()
            if first.process.poll() is None:
                first.stop()
    assert seen[-1]["type"] == "RUN_FINISHED", seen[-1]
    assert seen[-1]["result"]["answer"] == ANSWER
    messages: dict[str, str] = {}
    for event in of_type(seen, "TEXT_MESSAGE_CONTENT"):
        messages[event["messageId"]] = messages.get(event["messageId"], "") + event["delta"]
    # The lost attempt's text stands as sent; the retried attempt is a message of its own.
    assert list(messages.values()) == ["".join(LOST), ANSWER]
    assert list(messages) == ["turn-1-1", "turn-1-2"]
    starts = [e["messageId"] for e in of_type(seen, "TEXT_MESSAGE_START")]
    ends = [e["messageId"] for e in of_type(seen, "TEXT_MESSAGE_END")]
    assert starts == ends == ["turn-1-1", "turn-1-2"]
