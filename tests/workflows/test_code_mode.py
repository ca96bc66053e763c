"""Code mode on a real dev server: a script's host calls are gated, durable tool calls."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from temporalio.client import Client

from durable_tools import AgentConfig, CodeMode, DurableTools, RunStatus, ToolContext, ToolRegistry
from durable_tools.client.render._text import render_timeline
from support import answer, assert_replays, calls, running_worker, wait_for, write_script


def script_call(script: str, call_id: str = "s1") -> dict[str, Any]:
    return calls((call_id, "run_script", {"script": script}))


def shop_registry(executed: list[Any]) -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    def lookup(order_id: str, ctx: ToolContext) -> dict[str, Any]:
        """Look an order up."""
        executed.append(("lookup", order_id, ctx.idempotency_key))
        return {"order_id": order_id, "total_cents": 100 * len(order_id)}

    @registry.tool(approval=True, idempotent=True, redact=("card",))
    def refund(order_id: str, amount_cents: int, card: str, ctx: ToolContext) -> str:
        """Refund an order (a person approves)."""
        executed.append(("refund", order_id, amount_cents, ctx.idempotency_key))
        return f"refunded {amount_cents} on {order_id}"

    return registry


def tool_replies(conversation: list[Any]) -> dict[str, Any]:
    return {m.tool_call_id: m for m in conversation if m.role == "tool"}


APPROVAL_SCRIPT = """
order = await lookup(order_id="A12")
done = await refund(order_id="A12", amount_cents=order["total_cents"], card="card-SECRET-4242")
print("refund:", done)
order["total_cents"]
"""


async def test_a_script_host_call_waits_for_approval_with_its_own_arguments(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    executed: list[Any] = []
    model = write_script(tmp_path, [script_call(APPROVAL_SCRIPT), answer("done")])
    config = AgentConfig(model=model, code_mode=CodeMode())
    async with running_worker(client, shop_registry(executed), task_queue):
        run = await DurableTools(client, task_queue).start("refund A12", config=config)
        snapshot = await wait_for(run, lambda s: bool(s.pending_approvals))
        pending = snapshot.pending_approvals[0]
        # The person sees the host call and its (redacted) arguments, not the script.
        assert pending.call_id == "s1/2" and pending.tool == "refund"
        assert pending.arguments == {
            "order_id": "A12",
            "amount_cents": 300,
            "card": "[redacted]",
        }
        assert [e[0] for e in executed] == ["lookup"]  # the refund waits for the person
        await run.approve("s1/2", decider="alice", arguments_hash=pending.arguments_hash)
        result = await run.result()
        conversation = await run.conversation()
        timeline = {r.call_id: r for r in await run.timeline()}
        events = await run.events()
        history = await run.handle.fetch_history()
    assert result.status == RunStatus.COMPLETED
    reply = tool_replies(conversation)["s1"]
    assert not reply.is_error
    assert "refund: refunded 300 on A12" in reply.content and "result: 300" in reply.content
    # Each host call has the idempotency key <run>/<script call>/<n>.
    assert executed == [
        ("lookup", "A12", f"{run.run_id}/s1/1"),
        ("refund", "A12", 300, f"{run.run_id}/s1/2"),
    ]
    # The timeline lists the host calls under the script's call.
    assert timeline["s1"].tool == "run_script" and timeline["s1"].status == "completed"
    assert timeline["s1/1"].parent_call_id == "s1" and timeline["s1/1"].tool == "lookup"
    assert timeline["s1/2"].parent_call_id == "s1" and timeline["s1/2"].decided_by == "alice"
    assert "[redacted]" in timeline["s1/2"].arguments
    assert "SECRET" not in timeline["s1/2"].arguments
    # Scrubbing applies to host calls too. The card is a word no id or timestamp holds
    # (a bare "4242" once matched an event time's nanoseconds).
    assert "card-SECRET" not in history.to_json()
    # `durable-tools show` lists them indented under the script's row.
    rows = render_timeline(list(timeline.values())).splitlines()[2:]
    assert [row.split()[1:3] for row in rows] == [
        ["s1", "run_script"],
        ["s1/1", "lookup"],
        ["s1/2", "refund"],
    ]
    assert "   lookup" in rows[1]
    requested = [e for e in events if e.event == "approval.requested"]
    assert [e.call_id for e in requested] == ["s1/2"]
    await assert_replays(history)


DENIED_SCRIPT = """
try:
    await refund(order_id="B7", amount_cents=500, card="4111")
    outcome = "refunded"
except PermissionError as denied:
    outcome = "not refunded: " + str(denied)
order = await lookup(order_id="B7")
[outcome, order["order_id"]]
"""


async def test_a_denied_host_call_raises_in_the_script_which_handles_it(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    executed: list[Any] = []
    model = write_script(tmp_path, [script_call(DENIED_SCRIPT), answer("done")])
    config = AgentConfig(model=model, code_mode=CodeMode())
    async with running_worker(client, shop_registry(executed), task_queue):
        run = await DurableTools(client, task_queue).start("refund B7", config=config)
        await wait_for(run, lambda s: bool(s.pending_approvals))
        await run.deny("s1/1", decider="bob", reason="fraud suspected")
        result = await run.result()
        reply = tool_replies(await run.conversation())["s1"]
        timeline = {r.call_id: r for r in await run.timeline()}
    assert result.status == RunStatus.COMPLETED
    assert [e[0] for e in executed] == ["lookup"]  # the refund never ran
    assert not reply.is_error  # the script went on
    assert "not refunded:" in reply.content and "denied by bob: fraud suspected" in reply.content
    assert '"B7"' in reply.content
    assert timeline["s1/1"].status == "denied" and timeline["s1/2"].status == "completed"


def meeting_registry(met: dict[str, asyncio.Event]) -> ToolRegistry:
    """`left` and `right` each finish only once the other has started."""
    registry = ToolRegistry()

    async def meet(me: str, other: str) -> str:
        met[me].set()
        await asyncio.wait_for(met[other].wait(), 10)  # fails unless both run at once
        return me

    @registry.tool(read_only=True)
    async def left() -> str:
        """Meets `right`."""
        return await meet("left", "right")

    @registry.tool(read_only=True)
    async def right() -> str:
        """Meets `left`."""
        return await meet("right", "left")

    return registry


async def test_gathered_host_calls_run_as_concurrent_activities(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    met = {"left": asyncio.Event(), "right": asyncio.Event()}
    script = "import asyncio\nawait asyncio.gather(left(), right())"
    model = write_script(tmp_path, [script_call(script), answer("done")])
    config = AgentConfig(model=model, code_mode=CodeMode())
    async with running_worker(client, meeting_registry(met), task_queue):
        run = await DurableTools(client, task_queue).start("meet", config=config)
        result = await run.result()
        reply = tool_replies(await run.conversation())["s1"]
        history = await run.handle.fetch_history()
    assert result.status == RunStatus.COMPLETED
    assert 'result: ["left", "right"]' in reply.content
    # Both tool activities were scheduled before either completed.
    order = []
    for event in history.events:
        if event.HasField("activity_task_scheduled_event_attributes"):
            order.append(event.activity_task_scheduled_event_attributes.activity_type.name)
        elif event.HasField("activity_task_completed_event_attributes"):
            order.append("completed")
    tools = [i for i, name in enumerate(order) if name in ("left", "right")]
    assert len(tools) == 2 and "completed" not in order[tools[0] : tools[1]]
    await assert_replays(history)


async def test_a_runaway_script_is_stopped_with_a_clear_error(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    forever = "n = 0\nwhile True:\n    n += 1"
    hog = "blocks = []\nwhile True:\n    blocks.append('x' * 100_000)"
    # Each clock read is answered in the step and restarts the per-step clock: only the
    # whole script's bound stops this one.
    ticking = (
        "import time\nwhile True:\n    time.time()\n    n = 0\n"
        "    while n < 100_000:\n        n += 1"
    )
    model = write_script(
        tmp_path,
        [
            script_call(forever, "loop"),
            script_call(hog, "hog"),
            script_call(ticking, "tick"),
            answer("gave up"),
        ],
    )
    config = AgentConfig(
        model=model,
        code_mode=CodeMode(
            max_step_seconds=0.5, max_script_seconds=1.0, max_memory_bytes=8_000_000
        ),
    )
    async with running_worker(client, shop_registry([]), task_queue):
        run = await DurableTools(client, task_queue).start("spin", config=config)
        result = await asyncio.wait_for(run.result(), 60)
        replies = tool_replies(await run.conversation())
        timeline = {r.call_id: r for r in await run.timeline()}
    assert result.status == RunStatus.COMPLETED and result.final_answer == "gave up"
    assert replies["loop"].is_error and "TimeoutError" in replies["loop"].content
    assert "stopped at the per-step limit: max_step_seconds (0.5 s" in replies["loop"].content
    assert "memory limit: max_memory_bytes (8,000,000)" in replies["hog"].content
    assert replies["hog"].is_error and "MemoryError" in replies["hog"].content
    assert replies["tick"].is_error and "max_script_seconds (1 s" in replies["tick"].content
    assert {timeline[c].status for c in ("loop", "hog", "tick")} == {"failed"}


async def test_a_script_that_does_not_type_check_gets_a_repair_message(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    executed: list[Any] = []
    wrong = 'await lookup(order="A1")\nawait lookup(order_id=42)\nawait ship(order_id="A1")'
    fixed = 'r = await lookup(order_id="A1")\nr["total_cents"]'
    model = write_script(
        tmp_path, [script_call(wrong, "bad"), script_call(fixed, "good"), answer("done")]
    )
    config = AgentConfig(model=model, code_mode=CodeMode())
    async with running_worker(client, shop_registry(executed), task_queue):
        run = await DurableTools(client, task_queue).start("look A1", config=config)
        result = await run.result()
        replies = tool_replies(await run.conversation())
        timeline = {r.call_id: r for r in await run.timeline()}
    assert result.status == RunStatus.COMPLETED
    bad = replies["bad"]
    assert bad.is_error and "was not run" in bad.content
    assert "`order`" in bad.content  # the unknown argument
    assert "order_id" in bad.content  # the missing one / the wrong type
    assert "`ship`" in bad.content  # the unknown tool
    assert "call `run_script` again" in bad.content
    assert timeline["bad"].status == "invalid"
    assert executed == [("lookup", "A1", f"{run.run_id}/good/1")]  # only the fixed script ran
    assert "result: 200" in replies["good"].content


CLOCK_SCRIPT = """
import asyncio, random, time
from datetime import datetime
before = time.time()
await asyncio.sleep(1)
time.sleep(1)
after = time.time()
[round(after - before), random.random(), datetime.now().year]
"""


async def test_the_script_clock_randomness_and_sleeps_come_from_the_workflow(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    model = write_script(tmp_path, [script_call(CLOCK_SCRIPT), answer("done")])
    config = AgentConfig(model=model, code_mode=CodeMode())
    async with running_worker(client, shop_registry([]), task_queue):
        run = await DurableTools(client, task_queue).start("clock", config=config)
        result = await run.result()
        reply = tool_replies(await run.conversation())["s1"]
        history = await run.handle.fetch_history()
        started = history.events[0].event_time.ToDatetime()
    assert result.status == RunStatus.COMPLETED
    values = json.loads(reply.content.split("result: ", 1)[1].split("\n", 1)[0])
    assert values[0] >= 2 and values[2] == started.year  # the sleeps advanced the clock
    assert 0 <= values[1] < 1
    timers = [e for e in history.events if e.HasField("timer_started_event_attributes")]
    assert len(timers) == 2  # each sleep (async, then blocking) was a durable timer
    await assert_replays(history)
    # The script's interpreter state never entered history: a few KB for the whole run.
    assert len(history.to_json()) < 60_000
