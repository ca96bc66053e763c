"""Code mode under attack, on a real dev server: hostile scripts and a tampered state."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from temporalio.client import Client

from durable_tools import AgentConfig, CodeMode, DurableTools, RunStatus, ToolRegistry
from durable_tools.tools import FileSystemArtifactStore
from support import answer, assert_not_wedged, calls, running_worker, wait_for, write_script


def notes_registry(seen: list[Any]) -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    def note(data: dict[str, Any]) -> str:
        """Keep a note."""
        seen.append(data)
        return "kept"

    @registry.tool(approval=True)
    def wire(amount: int) -> str:
        """Wire money (a person approves)."""
        seen.append(("wire", amount))
        return "wired"

    return registry


CAUGHT = "\nexcept TypeError as e:\n    r = str(e)\nr"
HOSTILE = {
    "set": 'try:\n    await note(data={"s": {1, 2}})' + CAUGHT,
    "nan": 'try:\n    await note(data={"x": float("nan")})' + CAUGHT,
    "deep": (
        "d = {}\nfor _ in range(100):\n    d = {'d': d}\n"
        "try:\n    await note(data=d)\nexcept TypeError as e:\n    r = str(e)\nr"
    ),
    "huge_args": 'await note(data={"s": "x" * 2_000_000})',
    "huge_result": '"y" * 5_000_000',
    "quota": (
        "n = 0\nwhile True:\n    try:\n        await note(data={})\n"
        "    except RuntimeError:\n        n += 1"
    ),
    "file": 'open("/etc/passwd").read()',
    "env": "import os\nos.getenv('HOME')",
}


async def test_hostile_scripts_end_with_clear_errors_and_the_run_goes_on(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    seen: list[Any] = []
    steps = [calls((name, "run_script", {"script": s})) for name, s in HOSTILE.items()]
    model = write_script(tmp_path, [*steps, answer("survived")])
    config = AgentConfig(model=model, code_mode=CodeMode(max_host_calls=3, max_output_chars=2_000))
    async with running_worker(client, notes_registry(seen), task_queue):
        run = await DurableTools(client, task_queue).start("attack", config=config)
        result = await asyncio.wait_for(run.result(), 90)
        replies = {m.tool_call_id: m.content or "" for m in await run.conversation()}
        await assert_not_wedged(run.handle, allowed=0)
    assert result.status == RunStatus.COMPLETED and result.final_answer == "survived"
    assert "JSON values" in replies["set"] and "JSON values" in replies["nan"]
    assert "nest deeper than 64" in replies["deep"]
    assert "bytes of arguments" in replies["huge_args"] and "by reference" in replies["huge_args"]
    assert "more characters cut" in replies["huge_result"]
    assert len(replies["huge_result"]) < 3_000
    assert "stopped after 3 host call(s)" in replies["quota"]
    assert "round-trip limit: 212" in replies["quota"]
    assert "daemon:" not in replies["file"] and "`open` used when not defined" in replies["file"]
    assert "/root" not in replies["env"] and "Error" in replies["env"]
    # Only the quota script's three calls reached the tool; nothing hostile did.
    assert seen == [{}, {}, {}]


async def test_a_tampered_script_state_is_refused_not_resumed(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    seen: list[Any] = []
    store = tmp_path / "artifacts"
    script = 'await wire(amount=5)\nawait note(data={"after": True})'
    model = write_script(
        tmp_path, [calls(("s1", "run_script", {"script": script})), answer("done")]
    )
    config = AgentConfig(model=model, code_mode=CodeMode())
    registry = notes_registry(seen)
    async with running_worker(
        client, registry, task_queue, artifact_store=FileSystemArtifactStore(store)
    ):
        run = await DurableTools(client, task_queue).start("wire", config=config)
        snapshot = await wait_for(run, lambda s: bool(s.pending_approvals))
        # Someone with write access to the store swaps the suspended script's state.
        states = [p for p in store.rglob("*") if p.is_file()]
        assert states
        for path in states:
            path.write_bytes(b"forged interpreter state")
        pending = snapshot.pending_approvals[0]
        await run.approve(pending.call_id, decider="alice", arguments_hash=pending.arguments_hash)
        result = await asyncio.wait_for(run.result(), 60)
        reply = next(m for m in await run.conversation() if m.tool_call_id == "s1")
    assert result.status == RunStatus.COMPLETED
    assert reply.is_error and "state was lost" in (reply.content or "")
    assert "does not match" in (reply.content or "") or "not in this worker" in (
        reply.content or ""
    )
    assert seen == [("wire", 5)]  # the approved call ran; nothing after it did


async def test_cancelling_the_run_while_a_host_call_waits_ends_it_cleanly(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    seen: list[Any] = []
    script = "await wire(amount=1)"
    model = write_script(
        tmp_path, [calls(("s1", "run_script", {"script": script})), answer("done")]
    )
    config = AgentConfig(model=model, code_mode=CodeMode())
    async with running_worker(client, notes_registry(seen), task_queue):
        run = await DurableTools(client, task_queue).start("wire", config=config)
        await wait_for(run, lambda s: bool(s.pending_approvals))
        await run.cancel("changed my mind")
        result = await asyncio.wait_for(run.result(), 30)
        timeline = {r.call_id: r for r in await run.timeline()}
        await assert_not_wedged(run.handle, allowed=0)
    assert result.status == RunStatus.CANCELLED
    assert seen == []
    assert timeline["s1/1"].status == "cancelled"
