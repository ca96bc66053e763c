"""History growth: long conversations and lost snapshots on a real dev server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from temporalio.client import Client

from durable_tools import AgentConfig, DurableTools, Limits, RunStatus, ToolRegistry
from durable_tools.tools import FileSystemArtifactStore
from fake_openai import FakeOpenAIServer, RecordedRequest, chat_completion, tool_call
from support import answer, calls, running_worker, write_script

TURNS = 150
CHUNK = 15_000  # under the 16 KB output limit, so every output stays in the conversation


def largest_payload(history: Any) -> int:
    sizes = [0]
    for event in history.events:
        for field in (
            "activity_task_scheduled_event_attributes",
            "activity_task_completed_event_attributes",
            "workflow_execution_started_event_attributes",
        ):
            if event.HasField(field):
                attrs = getattr(event, field)
                payloads = attrs.result if hasattr(attrs, "result") else attrs.input
                sizes.append(payloads.ByteSize())
    return max(sizes)


async def test_conversation_past_2mb_runs_through_the_openai_adapter(
    client: Client, task_queue: str, tmp_path: Path, monkeypatch: Any
) -> None:
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    def page(n: int) -> str:
        """Read page n of a long document."""
        return f"page {n}: " + "x" * CHUNK

    seen_lengths: list[int] = []
    seen_tools: list[list[str]] = []

    def respond(request: RecordedRequest) -> dict[str, Any]:
        messages = request.json["messages"]
        seen_lengths.append(len(messages))
        seen_tools.append([t["function"]["name"] for t in request.json.get("tools", [])])
        turn = sum(1 for m in messages if m["role"] == "assistant")
        if turn < TURNS:
            return chat_completion(
                tool_calls=[tool_call(f"p{turn}", "page", json.dumps({"n": turn}))]
            )
        return chat_completion(content=f"read {turn} pages")

    with FakeOpenAIServer(respond) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        config = AgentConfig(
            model="openai:fake-model",
            limits=Limits(max_turns=TURNS + 1, max_tool_calls=TURNS),
            continue_as_new_after_events=400,
        )
        async with running_worker(
            client, registry, task_queue, artifact_store=FileSystemArtifactStore(tmp_path)
        ):
            run = await DurableTools(client, task_queue).start("read it all", config=config)
            result = await run.result()
            snapshot = await run.status()
    assert result.status == RunStatus.COMPLETED, result
    assert result.final_answer == f"read {TURNS} pages"
    # The model saw the whole conversation every time: prompt + 2 messages per turn.
    assert seen_lengths == [1 + 2 * t for t in range(TURNS + 1)]
    # Tool definitions travel by reference after the first call, yet every request has them.
    assert all(names == ["page"] for names in seen_tools)
    final_request = server.requests[-1].body
    assert len(final_request) > 2_000_000  # the conversation really passed 2 MB
    # ...yet no payload in history came close to Temporal's 2 MB limit: model inputs carry
    # only the new messages, and continue-as-new carries at most ~256 KB of conversation.
    history = await run.handle.fetch_history()
    assert largest_payload(history) < 400_000
    assert snapshot.continued >= 1 and snapshot.conversation_offset > 0


async def test_a_lost_snapshot_falls_back_to_the_full_conversation(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    registry = ToolRegistry()

    @registry.tool(approval=True, idempotent=True)
    def ship(order: str) -> str:
        """Ship an order (needs approval)."""
        return f"shipped {order}"

    model = write_script(tmp_path, [calls(("s1", "ship", {"order": "A"})), answer("shipped")])
    dt = DurableTools(client, task_queue)
    async with running_worker(
        client, registry, task_queue, artifact_store=FileSystemArtifactStore(tmp_path / "one")
    ):
        run = await dt.start("ship A", model=model)
        for _ in range(100):
            if (await run.status()).pending_approvals:
                break
    # A worker on "another machine": its artifact store does not hold the snapshot.
    async with running_worker(
        client,
        registry,
        task_queue,
        artifact_store=FileSystemArtifactStore(tmp_path / "two"),
        max_cached_workflows=0,
    ):
        await run.approve("s1")
        result = await run.result()
        events = [e.event for e in await run.events()]
    assert result.status == RunStatus.COMPLETED and result.final_answer == "shipped"
    assert "model.snapshot_missing" in events
