"""The timeline tells what happened to each call: attempts, who decided, what runs now."""

from __future__ import annotations

import asyncio
from pathlib import Path

from temporalio.client import Client

from durable_tools import DurableTools, RetrySpec, RunStatus, ToolRegistry
from support import (
    answer,
    calls,
    quick_slow_config,
    quick_slow_registry,
    running_worker,
    wait_for,
    write_script,
)

FAST_RETRY = RetrySpec(initial_interval=0.05, maximum_interval=0.1, maximum_attempts=3)


def flaky_registry(tries: dict[str, int]) -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(read_only=True, retry=FAST_RETRY)
    def lookup(key: str) -> str:
        """Retried by Temporal itself (read-only: safe to repeat)."""
        tries["lookup"] = tries.get("lookup", 0) + 1
        raise ConnectionError("backend unavailable")

    @registry.tool(retry=FAST_RETRY)
    def send(text: str) -> str:
        """Mutating and not idempotent: the workflow schedules its retries."""
        tries["send"] = tries.get("send", 0) + 1
        raise ConnectionError("backend unavailable")

    return registry


async def test_attempts_count_the_engines_retries_and_the_workflows(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    tries: dict[str, int] = {}
    model = write_script(
        tmp_path,
        [calls(("l1", "lookup", {"key": "k"}), ("s1", "send", {"text": "t"})), answer("gave up")],
    )
    async with running_worker(client, flaky_registry(tries), task_queue):
        run = await DurableTools(client, task_queue).start("try", model=model)
        result = await run.result()
        timeline = {r.call_id: r for r in await run.timeline()}
    assert result.status == RunStatus.COMPLETED
    assert tries == {"lookup": 3, "send": 3}
    assert timeline["l1"].attempts == 3 and timeline["l1"].status == "failed"
    assert timeline["s1"].attempts == 3 and timeline["s1"].status == "failed"


async def test_status_lists_only_calls_whose_tool_is_running(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    gate = asyncio.Event()
    registry, config = quick_slow_registry(gate), quick_slow_config(tmp_path)
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("go", config=config)
        snapshot = await wait_for(run, lambda s: s.running_tools == ["b"])
        timeline = {r.call_id: r.status for r in await run.timeline()}
        gate.set()
        result = await run.result()
    assert snapshot.running_tools == ["b"]
    assert timeline == {"a": "completed", "b": "running", "c": "invalid"}
    assert result.status == RunStatus.COMPLETED


async def test_the_timeline_says_who_decided_when_and_why(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    registry = ToolRegistry()

    @registry.tool(approval=True, idempotent=True)
    def refund(order_id: str) -> str:
        """Refund an order."""
        return f"refunded {order_id}"

    model = write_script(
        tmp_path,
        [
            calls(("r1", "refund", {"order_id": "A"}), ("r2", "refund", {"order_id": "B"})),
            answer("ok"),
        ],
    )
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("refund", model=model)
        for call_id, approve in (("r1", True), ("r2", False)):
            snapshot = await wait_for(
                run, lambda s, c=call_id: any(p.call_id == c for p in s.pending_approvals)
            )
            digest = next(p for p in snapshot.pending_approvals if p.call_id == call_id)
            await run.decide(
                call_id,
                approve=approve,
                decider="alice" if approve else "bob",
                reason=f"checked {call_id}",
                arguments_hash=digest.arguments_hash,
            )
        await run.result()
        timeline = {r.call_id: r for r in await run.timeline()}
    assert (timeline["r1"].status, timeline["r1"].decided_by) == ("completed", "alice")
    assert (timeline["r2"].status, timeline["r2"].decided_by) == ("denied", "bob")
    assert timeline["r1"].decision_reason == "checked r1"
    assert timeline["r1"].decided_at is not None and timeline["r2"].decided_at is not None
