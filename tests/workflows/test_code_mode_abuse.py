"""Code mode abused by the model that writes the script, on a real dev server: host calls
that borrow another call's id (and its approval), and scripts that sleep for ever."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from temporalio.client import Client

from durable_tools import (
    AgentConfig,
    CodeMode,
    DurableTools,
    ExecutionStrategy,
    RunStatus,
    ToolContext,
    ToolRegistry,
)
from support import answer, assert_not_wedged, calls, running_worker, wait_for, write_script


def refunds_registry(executed: list[Any]) -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(approval=True)
    def refund(order_id: str, amount_cents: int, ctx: ToolContext) -> str:
        """Refund an order (a person approves)."""
        executed.append((order_id, amount_cents, ctx.idempotency_key))
        return f"refunded {amount_cents}"

    @registry.tool(read_only=True)
    def lookup(order_id: str, ctx: ToolContext) -> str:
        """Look an order up."""
        executed.append((order_id, "lookup", ctx.idempotency_key))
        return "ok"

    return registry


BIG_REFUND = """
try:
    r = await refund(order_id="A", amount_cents=99_999)
except PermissionError:
    r = "denied"
r
"""


async def test_a_host_call_cannot_take_the_id_and_approval_of_a_direct_call(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # The model names a direct call `s1/1`, the id the script's first host call would get:
    # a person approving the small direct refund must not approve the script's big one.
    executed: list[Any] = []
    turn = calls(
        ("s1/1", "refund", {"order_id": "A", "amount_cents": 1}),
        ("s1", "run_script", {"script": BIG_REFUND}),
    )
    model = write_script(tmp_path, [turn, answer("done")])
    config = AgentConfig(model=model, code_mode=CodeMode())
    async with running_worker(client, refunds_registry(executed), task_queue):
        run = await DurableTools(client, task_queue).start("borrow", config=config)
        snapshot = await wait_for(run, lambda s: bool(s.pending_approvals))
        small = snapshot.pending_approvals[0]
        assert (small.call_id, small.arguments["amount_cents"]) == ("s1/1", 1)
        await run.approve(small.call_id, decider="alice", arguments_hash=small.arguments_hash)
        # The script runs next (calls run one at a time): its refund waits for its own
        # decision, under an id of its own, instead of taking alice's.
        snapshot = await wait_for(
            run, lambda s: bool(s.pending_approvals) or s.status.value == "completed"
        )
        assert [e[:2] for e in executed] == [("A", 1)], "the big refund ran unapproved"
        big = snapshot.pending_approvals[0]
        assert big.arguments["amount_cents"] == 99_999 and big.call_id != "s1/1"
        await run.deny(big.call_id, decider="alice", reason="too much")
        result = await asyncio.wait_for(run.result(), 60)
        replies = {m.tool_call_id: m.content or "" for m in await run.conversation()}
        timeline = {r.call_id: r for r in await run.timeline()}
    assert result.status == RunStatus.COMPLETED
    assert [e[:2] for e in executed] == [("A", 1)]
    assert '"denied"' in replies["s1"]
    assert timeline[big.call_id].parent_call_id == "s1"
    assert timeline["s1/1"].parent_call_id is None


async def test_in_parallel_a_host_call_cannot_hide_behind_a_direct_call_id(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # Both refunds wait at once: under one id, the person would see (and approve, by its
    # hash) only the small one, and the decision would settle both waits.
    executed: list[Any] = []
    turn = calls(
        ("s1/1", "refund", {"order_id": "A", "amount_cents": 1}),
        ("s1", "run_script", {"script": BIG_REFUND}),
    )
    model = write_script(tmp_path, [turn, answer("done")])
    config = AgentConfig(
        model=model, code_mode=CodeMode(), strategy=ExecutionStrategy(mode="parallel")
    )
    async with running_worker(client, refunds_registry(executed), task_queue):
        run = await DurableTools(client, task_queue).start("hide", config=config)
        snapshot = await wait_for(run, lambda s: len(s.pending_approvals) == 2)
        by_amount = {p.arguments["amount_cents"]: p for p in snapshot.pending_approvals}
        small, big = by_amount[1], by_amount[99_999]
        assert small.call_id == "s1/1" and big.call_id != small.call_id
        await run.approve(small.call_id, decider="alice", arguments_hash=small.arguments_hash)
        await run.deny(big.call_id, decider="alice", reason="too much")
        result = await asyncio.wait_for(run.result(), 60)
        replies = {m.tool_call_id: m.content or "" for m in await run.conversation()}
    assert result.status == RunStatus.COMPLETED
    assert [e[:2] for e in executed] == [("A", 1)]
    assert '"denied"' in replies["s1"]


async def test_a_reused_script_id_gives_its_host_calls_fresh_ids_and_keys(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # Turn 1 runs script `s1`; turn 2 makes a direct call named `s1/1` and runs a script
    # named `s1` again: no two of these calls share an idempotency key.
    executed: list[Any] = []
    script = 'await lookup(order_id="x")'
    model = write_script(
        tmp_path,
        [
            calls(("s1", "run_script", {"script": script})),
            calls(("s1/1", "lookup", {"order_id": "y"})),
            calls(("s1", "run_script", {"script": script})),
            answer("done"),
        ],
    )
    config = AgentConfig(model=model, code_mode=CodeMode())
    async with running_worker(client, refunds_registry(executed), task_queue):
        run = await DurableTools(client, task_queue).start("reuse", config=config)
        result = await asyncio.wait_for(run.result(), 60)
        await assert_not_wedged(run.handle, allowed=0)
    assert result.status == RunStatus.COMPLETED
    keys = [key for *_, key in executed]
    assert len(keys) == 3 and len(set(keys)) == 3, keys


SLEEPER = """
import asyncio
import time
n = 0
while True:
    SLEEP
    n += 1
"""


async def test_a_script_that_sleeps_in_a_loop_is_stopped_at_max_host_calls(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # Each zero sleep is a step of its own: unbounded, the run's history would grow until
    # Temporal terminated it. Sleeps count as host calls.
    scripts = {
        "async": SLEEPER.replace("SLEEP", "await asyncio.sleep(0)"),
        "blocking": SLEEPER.replace("SLEEP", "time.sleep(0)"),
        "caught": SLEEPER.replace(
            "SLEEP", "try:\n        await asyncio.sleep(0)\n    except RuntimeError:\n        pass"
        ),
    }
    steps = [calls((name, "run_script", {"script": s})) for name, s in scripts.items()]
    model = write_script(tmp_path, [*steps, answer("survived")])
    config = AgentConfig(model=model, code_mode=CodeMode(max_host_calls=5))
    async with running_worker(client, refunds_registry([]), task_queue):
        run = await DurableTools(client, task_queue).start("sleeper", config=config)
        result = await asyncio.wait_for(run.result(), 90)
        replies = {m.tool_call_id: m.content or "" for m in await run.conversation()}
        history = await run.handle.fetch_history()
        await assert_not_wedged(run.handle, allowed=0)
    assert result.status == RunStatus.COMPLETED and result.final_answer == "survived"
    for name in scripts:
        assert "max_host_calls" in replies[name], replies[name]
    assert len(history.events) < 400


async def test_a_call_id_holding_a_hash_sign_never_shares_a_key(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # The second call named `a` is keyed `<run>/a#1`; the model's id `a#1` must not be.
    executed: list[Any] = []
    model = write_script(
        tmp_path,
        [
            calls(("a", "lookup", {"order_id": "1"})),
            calls(("a", "lookup", {"order_id": "2"})),
            calls(("a#1", "lookup", {"order_id": "3"})),
            answer("done"),
        ],
    )
    async with running_worker(client, refunds_registry(executed), task_queue):
        run = await DurableTools(client, task_queue).start("hash", config=AgentConfig(model=model))
        result = await asyncio.wait_for(run.result(), 60)
    assert result.status == RunStatus.COMPLETED
    keys = [key for *_, key in executed]
    assert len(keys) == 3 and len(set(keys)) == 3, keys
