"""A tool's `schedule_to_close_timeout` bounds all of a call's attempts, also those the
workflow makes itself (a mutating, non-idempotent tool), on the real dev server."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path

from temporalio.client import Client, WorkflowHistory

from durable_tools import DurableTools, RetrySpec, RunStatus, ToolRegistry
from durable_tools.flows import FlowNode
from support import answer, assert_not_wedged, calls, running_worker, write_script

BUDGET = 2.0
"""The tool's schedule-to-close budget, in seconds."""
RETRY = RetrySpec(initial_interval=0.4, backoff_coefficient=1.0, maximum_attempts=30)
"""Thirty attempts 0.4 s apart would take 12 s: six times the budget."""


def failing_registry(tries: list[float]) -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(retry=RETRY, schedule_to_close_timeout=BUDGET)
    def send(text: str) -> str:
        """Send a message (mutating, not idempotent: the workflow retries it itself)."""
        tries.append(time.monotonic())
        raise ConnectionError("mail server unavailable")

    registry.flow(
        "send_twice",
        "Send a message, in a flow.",
        nodes={"first": FlowNode(tool="send", arguments={"text": "$args.text"})},
    )
    return registry


async def test_a_mutating_tool_is_not_retried_past_its_schedule_to_close_budget(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    tries: list[float] = []
    model = write_script(tmp_path, [calls(("s1", "send", {"text": "hi"})), answer("gave up")])
    async with running_worker(client, failing_registry(tries), task_queue):
        run = await DurableTools(client, task_queue).start("go", model=model)
        result = await run.result()
        [record] = await run.timeline()
        events = [e.event for e in await run.events() if e.call_id == "s1"]
        history = await run.handle.fetch_history()
        await assert_not_wedged(run.handle)
    assert result.status == RunStatus.COMPLETED
    assert record.status == "failed" and record.error_kind == "ToolExecutionError"
    # 0.4 s apart within 2 s: at most 5 attempts start, all of them within the budget.
    assert 2 <= len(tries) <= 5, tries
    assert record.attempts == len(tries)
    assert events[-2:] == ["tool.policy_exhausted", "tool.failed"]
    # Each attempt got only what was left of the budget as its own schedule-to-close
    # timeout: at least one retry interval less per attempt before it, never nothing.
    budgets = scheduled_budgets(history)
    assert len(budgets) == len(tries)
    assert budgets[0] == timedelta(seconds=BUDGET)
    for attempt, budget in enumerate(budgets[1:], start=1):
        spent = timedelta(seconds=RETRY.initial_interval * attempt)
        assert timedelta(milliseconds=1) < budget <= timedelta(seconds=BUDGET) - spent


def scheduled_budgets(history: WorkflowHistory) -> list[timedelta]:
    """The schedule-to-close timeout of each `send` attempt, in order."""
    return [
        event.activity_task_scheduled_event_attributes.schedule_to_close_timeout.ToTimedelta()
        for event in history.events
        if event.HasField("activity_task_scheduled_event_attributes")
        and event.activity_task_scheduled_event_attributes.activity_type.name == "send"
    ]


async def test_a_flow_node_is_not_retried_past_its_schedule_to_close_budget(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    tries: list[float] = []
    model = write_script(tmp_path, [calls(("f1", "send_twice", {"text": "hi"})), answer("gave up")])
    async with running_worker(client, failing_registry(tries), task_queue):
        run = await DurableTools(client, task_queue).start("go", model=model)
        result = await run.result()
        [message] = [m for m in await run.conversation() if m.role == "tool"]
    assert result.status == RunStatus.COMPLETED
    assert message.is_error
    assert 2 <= len(tries) <= 5, tries
