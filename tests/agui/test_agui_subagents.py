"""A sub-agent's approval, on a real dev server: the thread's AG-UI run shows it as
waiting (naming the sub-agent's run) instead of looking busy, and goes on to the answer
once it is decided where sub-agents' approvals are decided (the inbox, the CLI)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from agui_support import chat, chat_registry, run_input, user
from temporalio.client import Client

from durable_tools import AgentConfig, DurableTools
from support import answer, calls, write_script


async def test_a_subagents_approval_shows_as_waiting_and_the_stream_goes_on(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    ran: list[str] = []
    registry = chat_registry(ran)
    child = write_script(tmp_path, [calls(("p1", "pay", {"amount_cents": 700})), answer("paid")])
    registry.subagent(AgentConfig(model=child), name="payer", description="Pays bills.")
    script = [calls(("w1", "payer", {"task": "pay the bill"})), answer("the bill is paid")]
    thread = f"t-{uuid.uuid4().hex[:8]}"
    seen: list[dict[str, Any]] = []
    async with (
        chat(client, task_queue, tmp_path, script, tools=registry) as endpoint,
        endpoint.stream(endpoint.alice, run_input(thread, [user("pay my bill")])) as events,
    ):
        async for event in events:
            seen.append(event)
            if event["type"] != "STATE_SNAPSHOT":
                continue
            nested = [w for w in event["snapshot"]["waiting"] if w.get("subAgentRun")]
            if nested:
                (wait,) = nested
                assert wait["kind"] == "approval" and wait["tool"] == "pay"
                assert wait["callId"] == "p1"
                # Decided where a sub-agent's approvals are: its own run (the inbox does).
                await (
                    DurableTools(client)
                    .run(wait["subAgentRun"])
                    .decide_request(
                        "p1", True, arguments_hash=wait["argumentsHash"], decider="alice"
                    )
                )
    assert seen[-1]["type"] == "RUN_FINISHED", seen[-1]
    assert seen[-1]["result"]["answer"] == "the bill is paid"
    assert any(
        w.get("subAgentRun")
        for e in seen
        if e["type"] == "STATE_SNAPSHOT"
        for w in e["snapshot"]["waiting"]
    )
    assert ran == ["pay 700"]
