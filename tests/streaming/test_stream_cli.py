"""`durable-tools watch RUN` prints the model's text while it is generated."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest
from stream_support import ANSWER, FIRST, GatedProvider
from temporalio.client import Client

from cli_support import cli_env  # noqa: F401 - a fixture
from durable_tools import AgentConfig, DurableTools, ToolRegistry
from durable_tools.cli import main
from durable_tools.models import aclose_shared_clients
from durable_tools.streaming import stream_id
from fake_openai import FakeOpenAIServer
from support import assert_not_wedged, running_worker


@pytest.fixture
def provider() -> GatedProvider:
    return GatedProvider(tool_call_first=False)


@pytest.fixture
def server(provider: GatedProvider, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(provider) as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-cli-watch-0123")
        yield fake
        provider.gate.set()


async def until_printed(capsys: pytest.CaptureFixture[str], text: str, seen: list[str]) -> None:
    while text not in "".join(seen):
        seen.append(capsys.readouterr().out)
        await asyncio.sleep(0.05)


async def test_watch_prints_the_text_as_it_is_generated(
    client: Client,
    task_queue: str,
    cli_env: str,  # noqa: F811
    server: FakeOpenAIServer,
    provider: GatedProvider,
    capsys: pytest.CaptureFixture[str],
) -> None:
    try:
        async with running_worker(client, ToolRegistry(), task_queue):
            run = await DurableTools(client, task_queue).start(
                "Weather?", config=AgentConfig(model="openai:gpt-t", stream_tokens=True)
            )
            watching = asyncio.create_task(asyncio.to_thread(main, ["watch", run.run_id]))
            printed: list[str] = []
            await asyncio.wait_for(until_printed(capsys, "".join(FIRST), printed), 60)
            assert not provider.gate.is_set()  # printed while the model call is in flight
            assert "[turn 1] The weather in Paris" in "".join(printed)
            provider.gate.set()
            code = await asyncio.wait_for(watching, 60)
            printed.append(capsys.readouterr().out)
            await assert_not_wedged(run.handle)
            await assert_not_wedged(client.get_workflow_handle(stream_id(run.run_id)))

            # --json: one object per event, for programs.
            code_json = await asyncio.to_thread(main, ["watch", run.run_id, "--json"])
            lines = capsys.readouterr().out.splitlines()
    finally:
        await aclose_shared_clients()
    out = "".join(printed)
    assert code == 0
    assert f"[turn 1] {ANSWER}\n" in out
    assert out.rstrip().endswith("status: COMPLETED")
    assert code_json == 0
    events = [json.loads(line) for line in lines]
    assert events[-1] == {"kind": "run_ended", "text": "COMPLETED"}
    # Watching an ended run prints what its stream kept: the last message.
    assert "".join(e.get("text", "") for e in events if e["kind"] == "text") == ANSWER
