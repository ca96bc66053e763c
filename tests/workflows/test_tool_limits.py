"""Per-tool limits on a real Temporal dev server: concurrency caps, rate limits, budgets.

Each limit is measured from inside the tool (how many ran at once, when each started),
across several concurrent runs, not inferred from the test's own duration.
"""

from __future__ import annotations

import asyncio
import math
import time
from pathlib import Path

import pytest
from temporalio.client import Client

from durable_tools import (
    AgentConfig,
    DurableTools,
    ExecutionStrategy,
    Limits,
    RunStatus,
    ToolRegistrationError,
    ToolRegistry,
)
from durable_tools.client.render._tools import safety_summary, tool_json
from support import answer, assert_not_wedged, calls, running_worker, write_script

PARTITIONS = 4
"""Read partitions of a task queue on the dev server (`matching.numTaskqueueReadPartitions`)."""


class Gauge:
    """Counts calls running at once (and the most ever), under a lock."""

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.running = 0
        self.peak = 0
        self.finished = 0
        self.starts: list[float] = []

    async def enter(self) -> None:
        async with self.lock:
            self.starts.append(time.monotonic())
            self.running += 1
            self.peak = max(self.peak, self.running)

    async def leave(self) -> None:
        async with self.lock:
            self.running -= 1
            self.finished += 1


def parallel(model: str, width: int) -> AgentConfig:
    return AgentConfig(model=model, strategy=ExecutionStrategy(mode="parallel", concurrency=width))


def scheduled_queues(history: object) -> dict[str, set[str]]:
    """Task queues each activity type was scheduled on."""
    queues: dict[str, set[str]] = {}
    for event in history.events:  # type: ignore[attr-defined]
        if event.HasField("activity_task_scheduled_event_attributes"):
            attributes = event.activity_task_scheduled_event_attributes
            queues.setdefault(attributes.activity_type.name, set()).add(attributes.task_queue.name)
    return queues


async def test_max_concurrent_caps_calls_across_runs(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    gauge = Gauge()
    registry = ToolRegistry()

    @registry.tool(read_only=True, max_concurrent=2)
    async def crunch(n: int) -> str:
        """Slow work that a shared backend can take only two of at once."""
        await gauge.enter()
        try:
            await asyncio.sleep(0.4)
        finally:
            await gauge.leave()
        return f"done {n}"

    runs = []
    async with running_worker(client, registry, task_queue):
        tools = DurableTools(client, task_queue)
        for _ in range(2):  # two runs, each asking for three calls at once
            step = calls(*((f"c{i}", "crunch", {"n": i}) for i in range(3)))
            model = write_script(tmp_path, [step, answer("crunched")])
            runs.append(await tools.start("crunch", config=parallel(model, 3)))
        results = await asyncio.wait_for(asyncio.gather(*(run.result() for run in runs)), 60)
        for run in runs:
            await assert_not_wedged(run.handle)
        history = await runs[0].handle.fetch_history()
    print(f"max_concurrent=2: peak {gauge.peak} of {gauge.finished} calls")
    assert [r.status for r in results] == [RunStatus.COMPLETED] * 2
    assert gauge.finished == 6  # every call ran ...
    assert gauge.peak == 2  # ... never more than two at once, and the cap was used
    assert scheduled_queues(history)["crunch"] == {f"{task_queue}.tool.crunch"}


async def test_rate_limit_holds_across_runs(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    rate = 5.0
    gauge = Gauge()
    registry = ToolRegistry()

    @registry.tool(read_only=True, rate_limit=rate)
    async def ping(n: int) -> str:
        """Calls a rate-limited API."""
        await gauge.enter()
        await gauge.leave()
        return f"pong {n}"

    runs = []
    async with running_worker(client, registry, task_queue):
        tools = DurableTools(client, task_queue)
        for _ in range(3):  # three runs, five calls at once each: 15 calls queued together
            step = calls(*((f"p{i}", "ping", {"n": i}) for i in range(5)))
            model = write_script(tmp_path, [step, answer("pinged")])
            runs.append(await tools.start("ping", config=parallel(model, 5)))
        results = await asyncio.wait_for(asyncio.gather(*(run.result() for run in runs)), 90)
        for run in runs:
            await assert_not_wedged(run.handle)
    assert [r.status for r in results] == [RunStatus.COMPLETED] * 3
    starts = sorted(gauge.starts)
    assert len(starts) == 15
    busiest = max(sum(1 for t in starts if s <= t < s + 1.0) for s in starts)
    measured = (len(starts) - 1) / (starts[-1] - starts[0])
    print(f"rate_limit=5/s: {measured:.2f} starts/s overall, at most {busiest} in any 1 s window")
    # The server splits a queue's rate over its read partitions (4 by default), each a token
    # bucket of burst max(ceil(rate / 4), 1): up to 8 calls may start at once, and in any
    # window of T seconds at most 8 + 5 * T start. One call of slack for the jitter
    # between the server's dispatch and the tool's clock. Unlimited, all 15 start at once.
    burst = PARTITIONS * max(math.ceil(rate / PARTITIONS), 1)
    for i in range(len(starts)):
        for j in range(i + 1, len(starts)):
            window = starts[j] - starts[i]
            assert j - i + 1 <= burst + rate * window + 1, (
                f"{j - i + 1} calls started within {window:.2f}s"
            )


async def test_budget_refuses_calls_over_max_calls_per_run(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    ran: list[str] = []
    registry = ToolRegistry()

    @registry.tool(read_only=True, max_calls_per_run=2)
    def search(query: str) -> str:
        """A paid search API."""
        ran.append(query)
        return f"results for {query}"

    step = calls(*((f"s{i}", "search", {"query": f"q{i}"}) for i in range(3)))
    model = write_script(tmp_path, [step, answer("searched")])
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("search", model=model)
        result = await asyncio.wait_for(run.result(), 30)
        await assert_not_wedged(run.handle)
        replies = {
            m.tool_call_id: m.content or "" for m in await run.conversation() if m.role == "tool"
        }
        timeline = {r.call_id: r for r in await run.timeline()}
    assert result.status == RunStatus.COMPLETED
    assert ran == ["q0", "q1"]  # the third call never ran
    assert replies["s1"] == "results for q1"
    assert "budget of 2 calls for tool 'search' in this run is used up" in replies["s2"]
    assert "s2" in replies["s2"]  # the message keeps the call id
    assert timeline["s2"].status == "invalid"
    assert timeline["s2"].error_kind == "BudgetExhausted"


async def test_budget_survives_continue_as_new(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    ran: list[str] = []
    registry = ToolRegistry()

    @registry.tool(read_only=True, max_calls_per_run=2)
    def search(query: str) -> str:
        """A paid search API."""
        ran.append(query)
        return f"results for {query}"

    steps = [calls((f"s{i}", "search", {"query": f"q{i}"})) for i in range(4)]
    config = AgentConfig(
        model=write_script(tmp_path, [*steps, answer("searched")]),
        continue_as_new_after_events=20,
        limits=Limits(max_turns=10),
    )
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("search", config=config)
        result = await asyncio.wait_for(run.result(), 60)
        await assert_not_wedged(run.handle)
        snapshot = await run.status()
        events = [(e.event, e.call_id) for e in await run.events()]
        replies = {
            m.tool_call_id: m.content or "" for m in await run.conversation() if m.role == "tool"
        }
    assert result.status == RunStatus.COMPLETED
    assert snapshot.continued >= 1
    # A new run of the chain started between the first counted call and the refusal.
    continued_at = events.index(("run.continuing_as_new", None))
    assert events.index(("tool.started", "s0")) < continued_at
    assert continued_at < events.index(("tool.budget_exhausted", "s2"))
    assert ran == ["q0", "q1"]
    assert "used up" in replies["s2"] and "used up" in replies["s3"]


def test_limits_are_checked_at_registration_and_shown() -> None:
    registry = ToolRegistry()

    @registry.tool(max_concurrent=3, rate_limit=2.5, max_calls_per_run=10)
    def send(to: str) -> str:
        """Send a message."""
        return to

    spec = registry.get("send").spec
    assert (spec.policy.max_concurrent, spec.policy.rate_limit) == (3, 2.5)
    assert "limits: at most 3 at once, 2.5/s, 10 per run" in safety_summary(spec)
    assert tool_json(spec)["limits"] == {
        "max_concurrent": 3,
        "rate_limit": 2.5,
        "max_calls_per_run": 10,
    }
    with pytest.raises(ToolRegistrationError, match="local=True"):
        registry.register(lambda: "x", name="fast", local=True, rate_limit=1)
    with pytest.raises(ToolRegistrationError, match="max_concurrent"):
        registry.register(lambda: "x", name="capped", max_concurrent=0)
