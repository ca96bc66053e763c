"""Attacks on a run's cancel: twice, while a call waits for approval, during a retry's
backoff, and a tool that answers its cancel with a retryable error (issue #20, item 13).
A cancelled call's tool body never runs again."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import CancelledError

from durable_tools import (
    AgentConfig as _AgentConfig,
    DurableTools,
    RetrySpec,
    RunStatus,
    ToolContext,
    ToolExecutionError,
    ToolRegistry,
)
from support import answer, calls, running_worker, wait_for, write_script

CANCEL_GRACE_SECONDS = _AgentConfig.model_fields["cancel_grace_seconds"].default  # the default

NEVER = 300
SLACK = 10.0


class Runs:
    """Counts starts of a tool body in a file (what the worker did, not what it said)."""

    def __init__(self, tmp_path: Path) -> None:
        self.path = tmp_path / "runs.txt"
        self.started = threading.Event()

    def enter(self) -> None:
        with self.path.open("a") as handle:
            handle.write("ran\n")
        self.started.set()

    def count(self) -> int:
        return len(self.path.read_text().splitlines()) if self.path.exists() else 0

    async def until_started(self) -> None:
        await asyncio.wait_for(asyncio.to_thread(self.started.wait), 20)


def stubborn_registry(runs: Runs, release: threading.Event) -> ToolRegistry:
    """A tool `stubborn` that ignores cancellation until `release` is set."""
    registry = ToolRegistry()

    @registry.tool(read_only=True, local=False, start_to_close_timeout=NEVER)
    def stubborn(ctx: ToolContext) -> str:
        """Ignore the cancel."""
        runs.enter()
        release.wait(NEVER)
        return "done"

    return registry


async def test_cancelling_twice_neither_extends_nor_shortens_the_grace_period(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    runs, release = Runs(tmp_path), threading.Event()
    model = write_script(tmp_path, [calls(("s1", "stubborn", {})), answer("never")])
    async with running_worker(client, stubborn_registry(runs, release), task_queue):
        run = await DurableTools(client, task_queue).start("work", model=model)
        await runs.until_started()
        asked = time.monotonic()
        try:
            await run.cancel("first")
            for _ in range(100):  # the run has seen the first: its grace period runs
                if any(e.event == "run.cancel_requested" for e in await run.events()):
                    break
                await asyncio.sleep(0.05)
            await run.cancel("second")
            result = await asyncio.wait_for(run.result(), CANCEL_GRACE_SECONDS + SLACK)
        finally:
            release.set()
        took = time.monotonic() - asked
        events = await run.events()
        record = (await run.timeline())[0]
    assert result.status == RunStatus.CANCELLED and result.reason == "first"
    assert CANCEL_GRACE_SECONDS * 0.9 <= took < CANCEL_GRACE_SECONDS + SLACK
    assert [e.detail for e in events if e.event == "run.cancel_requested"] == ["first"]
    assert record.error_kind == "OutcomeUnknown"
    assert runs.count() == 1


async def test_cancel_while_a_call_waits_for_approval_never_runs_it(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    runs = Runs(tmp_path)
    registry = ToolRegistry()

    @registry.tool(approval=True, local=False)
    def transfer(amount: int) -> str:
        """Move money."""
        runs.enter()
        return f"moved {amount}"

    model = write_script(tmp_path, [calls(("t1", "transfer", {"amount": 5})), answer("never")])
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("work", model=model)
        await wait_for(run, lambda s: bool(s.pending_approvals))
        asked = time.monotonic()
        await run.cancel("not now")
        result = await asyncio.wait_for(run.result(), SLACK)
        took = time.monotonic() - asked
        record = (await run.timeline())[0]
    assert result.status == RunStatus.CANCELLED
    assert took < CANCEL_GRACE_SECONDS  # nothing was running: no grace period to wait
    assert record.status == "cancelled" and record.error_kind is None
    assert runs.count() == 0


async def test_cancel_during_a_retry_backoff_ends_the_run_without_another_attempt(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    runs = Runs(tmp_path)
    registry = ToolRegistry()

    # Not safe to repeat: the workflow retries its clean failures, after a long backoff.
    @registry.tool(local=False, retry=RetrySpec(initial_interval=NEVER, maximum_attempts=3))
    def flaky() -> str:
        """Fails the first time."""
        runs.enter()
        raise ToolExecutionError("busy", retryable=True)

    model = write_script(tmp_path, [calls(("f1", "flaky", {})), answer("never")])
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("work", model=model)
        for _ in range(200):
            if any(e.event == "tool.retrying" for e in await run.events()):
                break
            await asyncio.sleep(0.05)
        asked = time.monotonic()
        await run.cancel("stop retrying")
        result = await asyncio.wait_for(run.result(), SLACK)
        took = time.monotonic() - asked
        record = (await run.timeline())[0]
    assert result.status == RunStatus.CANCELLED
    assert took < CANCEL_GRACE_SECONDS  # the backoff is a timer: nothing to wait for
    assert record.status == "cancelled"
    assert runs.count() == 1


async def test_a_retryable_error_raised_after_the_cancel_is_not_retried(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    runs = Runs(tmp_path)
    registry = ToolRegistry()

    @registry.tool(
        local=False,
        start_to_close_timeout=NEVER,
        retry=RetrySpec(initial_interval=0.05, maximum_attempts=5),
    )
    def interrupted(ctx: ToolContext) -> str:
        """Answers a cancel with a retryable error (say, its connection was dropped)."""
        runs.enter()
        deadline = time.monotonic() + NEVER
        while time.monotonic() < deadline:
            if ctx.cancelled:
                raise ToolExecutionError("connection dropped", retryable=True)
            time.sleep(0.05)
        return "done"

    model = write_script(tmp_path, [calls(("i1", "interrupted", {})), answer("never")])
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("work", model=model)
        await runs.until_started()
        await run.cancel()
        result = await asyncio.wait_for(run.result(), CANCEL_GRACE_SECONDS + SLACK)
        record = (await run.timeline())[0]
    # Before: the workflow retried the call after the cancel, running the tool again.
    assert result.status == RunStatus.CANCELLED
    assert record.status == "failed" and record.attempts == 1
    assert runs.count() == 1


async def test_a_cancel_through_temporal_gives_a_stubborn_tool_the_same_grace_period(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    runs, release = Runs(tmp_path), threading.Event()
    model = write_script(tmp_path, [calls(("s1", "stubborn", {})), answer("never")])
    async with running_worker(client, stubborn_registry(runs, release), task_queue):
        run = await DurableTools(client, task_queue).start("work", model=model)
        await runs.until_started()
        asked = time.monotonic()
        try:
            # What a parent run closing over its sub-agent does (`temporal workflow cancel`).
            await run.handle.cancel()
            with pytest.raises(WorkflowFailureError) as failure:
                await asyncio.wait_for(run.handle.result(), CANCEL_GRACE_SECONDS + SLACK)
            took = time.monotonic() - asked
            status = await run.status()
            record = (await run.timeline())[0]
            result = await run.result()  # how it ended, read from its state
        finally:
            release.set()
    assert isinstance(failure.value.cause, CancelledError)  # the execution closed CANCELED
    assert took < CANCEL_GRACE_SECONDS + SLACK
    assert status.status == RunStatus.CANCELLED
    assert result.status == RunStatus.CANCELLED
    assert record.error_kind == "OutcomeUnknown"
    assert runs.count() == 1
