"""The hook and event contracts (docs/events.md, "The worker's tool events"), on the real
dev server: every attempt that started ends in exactly one `tool.completed` or
`tool.failed` on the worker's event bus, and one after-hook round, whether the tool
failed, was cancelled or timed out; `tool.policy_exhausted` reaches the bus; a skipped
call leaves the run's audit stream in sequence."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from temporalio.client import Client

from durable_tools import (
    AgentConfig,
    AgentRun,
    DurableTools,
    RetrySpec,
    RunEvent,
    RunStatus,
    Skip,
    ToolContext,
    ToolExecutionError,
    ToolRegistry,
    ToolResult,
)
from durable_tools.tools import ToolCallInfo, ToolEvent, ToolFailure
from support import answer, assert_not_wedged, calls, running_worker, write_script

WAIT = 30.0
"""Longest wait for the worker to report what the run already recorded."""


class Observer:
    """An after-hook and a bus listener that record what they see of every call."""

    def __init__(self) -> None:
        self.events: list[ToolEvent] = []
        self.afters: list[tuple[str, ToolResult]] = []
        self._changed = asyncio.Event()

    def after(self, call: ToolCallInfo, result: ToolResult) -> ToolResult | None:
        self.afters.append((call.context.tool_call_id, result))
        self._changed.set()
        if isinstance(result, ToolFailure):  # an attempt to hide a failure: ignored
            return ToolResult(content=[], is_error=False)
        return None

    def listen(self, event: ToolEvent) -> None:
        self.events.append(event)
        self._changed.set()

    def names(self, call_id: str) -> list[str]:
        return [e.name for e in self.events if e.call_id == call_id]

    async def until(self, done: Callable[[], bool]) -> None:
        """Wait (at most `WAIT` seconds) until the worker has reported enough."""

        async def poll() -> None:
            while not done():
                self._changed.clear()
                await self._changed.wait()

        await asyncio.wait_for(poll(), WAIT)


def observed(registry: ToolRegistry) -> Observer:
    observer = Observer()
    registry.use(observer)
    registry.on("*", observer.listen)
    return observer


def ended(names: list[str]) -> int:
    return sum(1 for name in names if name in ("tool.completed", "tool.failed"))


async def start(client: Client, task_queue: str, tmp_path: Path, *steps: Any) -> AgentRun:
    config = AgentConfig(model=write_script(tmp_path, [*steps, answer("done")]))
    return await DurableTools(client, task_queue).start("go", config=config)


async def test_a_cancelled_attempt_ends_once_for_listeners_and_after_hooks(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    registry = ToolRegistry()
    running = asyncio.Event()

    @registry.tool(read_only=True, heartbeat_timeout=2.0)
    async def wait_forever(ctx: ToolContext) -> str:
        """Wait until cancelled."""
        running.set()
        await asyncio.Event().wait()
        return "never"

    observer = observed(registry)
    async with running_worker(client, registry, task_queue):
        run = await start(client, task_queue, tmp_path, calls(("w1", "wait_forever", {})))
        await asyncio.wait_for(running.wait(), WAIT)
        await run.cancel("operator stopped it")
        result = await run.result()
        await observer.until(lambda: ended(observer.names("w1")) >= 1)
        await assert_not_wedged(run.handle)
    assert result.status == RunStatus.CANCELLED
    assert observer.names("w1") == ["tool.started", "tool.failed"]
    failed = observer.events[-1]
    assert failed.error_kind == "Cancelled"
    [(call_id, seen)] = observer.afters
    assert call_id == "w1" and isinstance(seen, ToolFailure)
    assert seen.is_error and seen.error_kind == "Cancelled"


async def test_a_timed_out_attempt_ends_once_and_exhausts_the_policy_on_the_bus(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    registry = ToolRegistry()

    @registry.tool(start_to_close_timeout=1.0)
    async def hang(ctx: ToolContext) -> str:
        """Hang past the timeout (mutating: a timed-out attempt is never retried)."""
        await asyncio.Event().wait()
        return "never"

    @registry.tool(local=True, start_to_close_timeout=1.0, retry=RetrySpec(maximum_attempts=1))
    async def hang_here(ctx: ToolContext) -> str:
        """Hang past the timeout, as a local activity."""
        await asyncio.Event().wait()
        return "never"

    observer = observed(registry)
    async with running_worker(client, registry, task_queue):
        run = await start(
            client, task_queue, tmp_path, calls(("h1", "hang", {}), ("h2", "hang_here", {}))
        )
        result = await run.result()
        audit = [e.event for e in await run.events() if e.call_id == "h1"]
        await observer.until(
            lambda: all(
                "tool.policy_exhausted" in observer.names(c) and len(observer.afters) == 2
                for c in ("h1", "h2")
            )
        )
    assert result.status == RunStatus.COMPLETED
    assert "tool.policy_exhausted" in audit  # the run's own record, as before
    for call_id in ("h1", "h2"):
        assert observer.names(call_id) == [
            "tool.started",
            "tool.failed",
            "tool.policy_exhausted",
        ], call_id
        kinds = {e.error_kind for e in observer.events if e.call_id == call_id}
        assert kinds == {None, "ToolTimeout"}
    assert sorted(call_id for call_id, _ in observer.afters) == ["h1", "h2"]
    for _, seen in observer.afters:
        assert isinstance(seen, ToolFailure) and seen.error_kind == "ToolTimeout"


async def test_after_hooks_see_each_failed_attempt_and_the_bus_the_exhausted_policy(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    registry = ToolRegistry()
    fast = {"initial_interval": 0.05, "maximum_interval": 0.1, "maximum_attempts": 2}

    @registry.tool(read_only=True, retry=RetrySpec(**fast))
    def lookup(key: str) -> str:
        """Retried by Temporal (read-only); always down."""
        raise ConnectionError("backend unavailable")

    @registry.tool(retry=RetrySpec(**fast))
    def send(text: str) -> str:
        """Retried by the workflow (mutating); always down."""
        raise ConnectionError("backend unavailable")

    @registry.tool(read_only=True)
    def refuse(key: str) -> str:
        """Fails in a way no retry fixes."""
        raise ToolExecutionError("no such key", retryable=False)

    observer = observed(registry)
    async with running_worker(client, registry, task_queue):
        run = await start(
            client,
            task_queue,
            tmp_path,
            calls(("l1", "lookup", {"key": "k"}), ("s1", "send", {"text": "t"})),
            calls(("r1", "refuse", {"key": "k"})),
        )
        result = await run.result()
        replies = {m.tool_call_id: m for m in await run.conversation() if m.role == "tool"}
    assert result.status == RunStatus.COMPLETED
    for call_id in ("l1", "s1"):
        assert observer.names(call_id) == [
            "tool.started",
            "tool.failed",
            "tool.started",
            "tool.failed",
            "tool.policy_exhausted",
        ], call_id
        seen = [r for c, r in observer.afters if c == call_id]
        assert len(seen) == 2 and all(isinstance(r, ToolFailure) for r in seen)
        assert all(r.error_kind == "ToolExecutionError" and r.retryable for r in seen)
        # The after-hook's replacement was ignored: the model reads the failure.
        assert replies[call_id].is_error and "backend unavailable" in (
            replies[call_id].content or ""
        )
    # Not retryable: nothing was exhausted.
    assert observer.names("r1") == ["tool.started", "tool.failed"]
    [(_, refused)] = [(c, r) for c, r in observer.afters if c == "r1"]
    assert isinstance(refused, ToolFailure) and not refused.retryable


async def test_a_skipped_call_leaves_the_audit_stream_in_sequence(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    def note(text: str) -> str:
        """Note something."""
        return "noted"

    def freeze(call: ToolCallInfo) -> Skip | None:
        return Skip("frozen") if call.arguments["text"] == "no" else None

    registry.use(SimpleNamespace(before=freeze))
    async with running_worker(client, registry, task_queue):
        run = await start(
            client,
            task_queue,
            tmp_path,
            calls(("a", "note", {"text": "yes"})),
            calls(("b", "note", {"text": "no"})),
            calls(("c", "note", {"text": "yes"})),
        )
        await run.result()
        page = await run.events_since(0)
        pages = [await run.events_since(cursor) for cursor in range(page.total + 1)]
        delivered: list[RunEvent] = []

        class ListSink:
            def emit(self, run_id: str, event: RunEvent) -> None:
                delivered.append(event)

            def close(self) -> None:
                return None

        followed = await run.follow_events(ListSink())
    assert page.missed == 0 and page.next == page.total
    assert [e.seq for e in page.events] == list(range(page.total))
    for cursor, later in enumerate(pages):
        # From any cursor: no gap reported, no event delivered again.
        assert later.missed == 0
        assert [e.seq for e in later.events] == list(range(cursor, page.total))
    assert followed.missed == 0
    assert [e.seq for e in delivered] == list(range(page.total))
    assert [e.event for e in delivered if e.call_id == "b"] == ["tool.started", "tool.skipped"]
