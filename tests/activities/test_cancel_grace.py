"""A tool that ignores its cancellation does not hold its run: after a grace period the run
ends cancelled, records the call's outcome as unknown, never runs the tool again, and the
worker logs how the tool ended later (issue #20, item 13)."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from pathlib import Path

import pytest
from temporalio.client import Client

import cli_support
from cli_support import cli, cli_json
from durable_tools import (
    AgentConfig,
    AgentRun,
    DurableTools,
    RunStatus,
    ToolCallRecord,
    ToolContext,
    ToolRegistry,
)
from support import answer, calls, history_of, running_worker, scheduled_activities, write_script

CANCEL_GRACE_SECONDS = AgentConfig.model_fields["cancel_grace_seconds"].default  # the default

NEVER = 300
"""Longer than any test waits: a tool still running then was never released."""

SLACK = 10.0
"""Added to the grace period for scheduling, heartbeats and a loaded machine."""

LATE = "ignored its cancellation"

cli_env = cli_support.cli_env  # the fixture, by the name the tests ask for
"""What the worker logs when a cancelled tool ends after all."""


class Stubborn:
    """A tool body's witness: how often it started, when it started and when it ended."""

    def __init__(self, tmp_path: Path) -> None:
        self.runs = tmp_path / "runs.txt"  # one line per start of the tool body
        self.started, self.release, self.ended = (threading.Event() for _ in range(3))

    def enter(self) -> None:
        with self.runs.open("a") as handle:
            handle.write("ran\n")
        self.started.set()

    def count(self) -> int:
        return len(self.runs.read_text().splitlines()) if self.runs.exists() else 0

    async def until_started(self) -> None:
        await asyncio.wait_for(asyncio.to_thread(self.started.wait), 20)


async def _ends_cancelled_unknown(
    run: AgentRun,
    call_id: str,
    stubborn: Stubborn,
    *,
    within: float = CANCEL_GRACE_SECONDS,
    grace: float = CANCEL_GRACE_SECONDS,
) -> None:
    """Cancel `run` and check it ends cancelled within `within` seconds (plus slack),
    without waiting for the tool, with the call recorded as "outcome unknown"."""
    asked = time.monotonic()
    await run.cancel("operator stopped it")
    result = await asyncio.wait_for(run.result(), within + SLACK)
    took = time.monotonic() - asked
    assert not stubborn.ended.is_set()  # the tool is still running: the run did not wait
    assert result.status == RunStatus.CANCELLED
    assert took >= grace * 0.9  # it gave the tool its grace period
    record = _record(await run.timeline(), call_id)
    assert record.status == "outcome_unknown" and record.error_kind == "OutcomeUnknown"
    assert record.result is not None and "may have taken effect" in record.result
    events = [e for e in await run.events() if e.call_id == call_id]
    names = [e.event for e in events]
    assert "tool.outcome_unknown" in names
    assert not {"tool.completed", "tool.failed", "tool.cancelled"} & set(names)


def _record(timeline: list[ToolCallRecord], call_id: str) -> ToolCallRecord:
    return next(r for r in timeline if r.call_id == call_id)


async def _late_end_logged(caplog: pytest.LogCaptureFixture, what: str) -> None:
    """Wait for the worker's line saying how the cancelled tool ended."""
    for _ in range(400):
        if any(LATE in r.getMessage() and what in r.getMessage() for r in caplog.records):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"no late-end log line: {[r.getMessage() for r in caplog.records]}")


def _stubborn_sync(
    registry: ToolRegistry, stubborn: Stubborn, *, local: bool, start_to_close_timeout: float
) -> None:
    @registry.tool(read_only=True, local=local, start_to_close_timeout=start_to_close_timeout)
    def stubborn_sync(ctx: ToolContext) -> str:
        """Work on, whatever the cancellation flag says."""
        stubborn.enter()
        try:
            stubborn.release.wait(NEVER)  # ignores ctx.cancelled
        finally:
            stubborn.ended.set()
        return "done after all"


async def test_sync_tool_ignoring_cancel_ends_the_run_with_outcome_unknown(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    cli_env: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.WARNING, logger="durable_tools._activities")
    stubborn = Stubborn(tmp_path)
    registry = ToolRegistry()
    _stubborn_sync(registry, stubborn, local=False, start_to_close_timeout=NEVER + 60)
    model = write_script(tmp_path, [calls(("s1", "stubborn_sync", {})), answer("never")])
    # No cache: every step replays from history, so the grace period replays too.
    async with running_worker(client, registry, task_queue, max_cached_workflows=0):
        run = await DurableTools(client, task_queue).start("work", model=model)
        await stubborn.until_started()
        # Before: the run said `running` until the tool ended, then `cancelled` with the
        # call `completed`.
        try:
            await _ends_cancelled_unknown(run, "s1", stubborn)
        finally:
            stubborn.release.set()
        # `durable-tools show` says so, in the table and in its JSON.
        code, text, _ = await cli(capsys, "show", run.run_id)
        assert code == 0 and "outcome unknown: the tool did not stop" in text
        shown = await cli_json(capsys, "show", run.run_id)
        assert shown["timeline"][0]["error_kind"] == "OutcomeUnknown"
        # The worker sees the thread end: it logs how, and nothing runs the tool again.
        await _late_end_logged(caplog, "returned a result")
        history = await history_of(run.handle)
    assert stubborn.count() == 1
    assert scheduled_activities(history).count("stubborn_sync") == 1


async def test_cancelled_run_records_a_tool_that_stops_in_its_grace_period_as_it_ended(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    stubborn = Stubborn(tmp_path)
    registry = ToolRegistry()

    @registry.tool(read_only=True, local=False, start_to_close_timeout=NEVER + 60)
    def slow_to_stop(ctx: ToolContext) -> str:
        """Stops at the cancel, after a short cleanup."""
        stubborn.enter()
        while not ctx.cancelled:
            time.sleep(0.05)
        stubborn.ended.set()
        ctx.raise_if_cancelled()
        return "unreachable"

    model = write_script(tmp_path, [calls(("s1", "slow_to_stop", {})), answer("never")])
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("work", model=model)
        await stubborn.until_started()
        await run.cancel()
        result = await asyncio.wait_for(run.result(), CANCEL_GRACE_SECONDS + SLACK)
        record = _record(await run.timeline(), "s1")
    assert result.status == RunStatus.CANCELLED
    assert record.status == "cancelled" and record.error_kind != "OutcomeUnknown"
    assert stubborn.count() == 1


LOCAL_TIMEOUT = 10
"""The longest `start_to_close_timeout` of a tool chosen to run locally (local-activities.md)."""

WORKFLOW_TASK_HEARTBEAT = 8
"""A local activity holds its workflow task; the worker heartbeats it every 8 s, and only
then does the run see a signal (the cancel) or fire a timer."""


async def test_local_sync_tool_ignoring_cancel_ends_the_run_with_outcome_unknown(
    client: Client, task_queue: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="durable_tools._activities")
    stubborn = Stubborn(tmp_path)
    registry = ToolRegistry()
    _stubborn_sync(registry, stubborn, local=True, start_to_close_timeout=LOCAL_TIMEOUT)
    model = write_script(tmp_path, [calls(("s1", "stubborn_sync", {})), answer("never")])
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("work", model=model)
        await stubborn.until_started()
        try:
            # The local activity times out (it is not retried: its cancel was requested).
            bound = LOCAL_TIMEOUT + WORKFLOW_TASK_HEARTBEAT
            await _ends_cancelled_unknown(run, "s1", stubborn, within=bound)
        finally:
            stubborn.release.set()
        await _late_end_logged(caplog, "returned a result")
    assert stubborn.count() == 1


async def test_async_tool_ignoring_cancelled_error_ends_the_run_with_outcome_unknown(
    client: Client, task_queue: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="durable_tools._activities")
    stubborn = Stubborn(tmp_path)
    registry = ToolRegistry()

    @registry.tool(read_only=True, local=False, start_to_close_timeout=NEVER + 60)
    async def stubborn_async(ctx: ToolContext) -> str:
        """Swallow every cancellation and go on."""
        stubborn.enter()
        try:
            while not stubborn.release.is_set():
                try:
                    await asyncio.sleep(0.05)
                except asyncio.CancelledError:
                    continue
        finally:
            stubborn.ended.set()
        raise RuntimeError("failed after all")

    model = write_script(tmp_path, [calls(("a1", "stubborn_async", {})), answer("never")])
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("work", model=model)
        await stubborn.until_started()
        try:
            await _ends_cancelled_unknown(run, "a1", stubborn)
        finally:
            stubborn.release.set()
        await _late_end_logged(caplog, "raised ToolExecutionError")
    assert stubborn.count() == 1


async def test_the_grace_period_is_the_runs_to_choose(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    registry = ToolRegistry()
    stubborn = Stubborn(tmp_path)
    _stubborn_sync(registry, stubborn, local=False, start_to_close_timeout=NEVER)
    model = write_script(tmp_path, [calls(("s1", "stubborn_sync", {})), answer("never")])
    config = AgentConfig(model=model, cancel_grace_seconds=1.0)
    async with running_worker(client, registry, task_queue):
        try:
            run = await DurableTools(client, task_queue).start("go", config=config)
            await stubborn.until_started()
            await _ends_cancelled_unknown(run, "s1", stubborn, within=1.0, grace=1.0)
            record = _record(await run.timeline(), "s1")
        finally:
            stubborn.release.set()  # before the worker stops: it waits for its activities
    assert record.result is not None and "within 1 s" in record.result
    assert stubborn.count() == 1
