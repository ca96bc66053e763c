"""Flows against a real dev server: one tool call, a child workflow, one activity a node."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from flow_tools import Calls, diamond_registry
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter

from durable_tools import (
    AgentConfig,
    DurableTools,
    ExecutionPolicy,
    RetrySpec,
    RunStatus,
    ToolExecutionError,
    ToolRegistry,
)
from durable_tools.flows import FlowNode, FlowWorkflow
from support import (
    answer,
    assert_not_wedged,
    calls,
    running_worker,
    scheduled_activities,
    wait_for,
    write_script,
)


def summaries(history: WorkflowHistory) -> dict[str, str]:
    """Activity type -> its UI summary, for every activity scheduled in a history."""
    converter = pydantic_data_converter.payload_converter
    found = {}
    for event in history.events:
        if event.HasField("activity_task_scheduled_event_attributes") and event.HasField(
            "user_metadata"
        ):
            name = event.activity_task_scheduled_event_attributes.activity_type.name
            found[name] = converter.from_payload(event.user_metadata.summary, str)
    return found


def node_order(history: WorkflowHistory) -> list[str]:
    """`scheduled:<tool>` and `completed:<tool>` in history order."""
    names: dict[int, str] = {}
    order = []
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            names[event.event_id] = (
                event.activity_task_scheduled_event_attributes.activity_type.name
            )
            order.append(f"scheduled:{names[event.event_id]}")
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            done = event.activity_task_completed_event_attributes.scheduled_event_id
            order.append(f"completed:{names[done]}")
    return order


async def test_a_diamond_flow_is_one_tool_call_with_concurrent_middle_nodes(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    seen = Calls()
    registry = diamond_registry(seen)
    model = write_script(
        tmp_path, [calls(("c1", "trip_brief", {"city": "Paris"})), answer("brief given")]
    )
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start(
            "brief me", config=AgentConfig(model=model), run_id=f"flow-{task_queue}"
        )
        result = await run.result()
        assert result.status == RunStatus.COMPLETED, result.reason
        # The model saw one tool message, the flow's declared output (the join node's).
        tool_messages = [m for m in await run.conversation() if m.role == "tool"]
        assert [(m.tool_call_id, m.name) for m in tool_messages] == [("c1", "trip_brief")]
        assert tool_messages[0].content == "Paris: sunny at 48.85,2.35, time zone Europe/Paris"
        assert not tool_messages[0].is_error
        # Each node ran once, and none of them ran in the agent's own history.
        assert seen.counts == {"geocode": 1, "weather": 1, "timezone": 1, "summarize": 1}
        parent = run.handle
        assert not {"geocode", "weather", "timezone", "summarize"} & set(
            scheduled_activities(await parent.fetch_history())
        )
        # The flow ran as the child workflow named after the run and the call.
        child = client.get_workflow_handle(f"{run.run_id}.c1")
        described = await child.describe()
        assert described.workflow_type == "FlowWorkflow"
        assert described.status == WorkflowExecutionStatus.COMPLETED
        history = await child.fetch_history()
        order = node_order(history)
        # The middle nodes were both scheduled before either completed: concurrently.
        assert order.index("scheduled:weather") < order.index("completed:timezone")
        assert order.index("scheduled:timezone") < order.index("completed:weather")
        assert order[0] == "scheduled:geocode" and order[-1] == "completed:summarize"
        # Every node is visible in the UI with a summary: tool, call id, arguments.
        shown = summaries(history)
        assert shown["geocode"] == 'geocode c1.geo city="Paris"'
        assert shown["weather"].startswith("weather c1.sky lat=48.85")
        assert set(shown) == {"geocode", "weather", "timezone", "summarize"}
        events = [e.event for e in await run.events() if e.call_id == "c1"]
        assert events[0] == "tool.started" and events[-1] == "tool.completed"
        for handle in (parent, child):
            await assert_not_wedged(handle)


def failing_registry(attempts: list[str], cancelled: list[str]) -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    def lookup(key: str) -> str:
        """Look a key up."""
        attempts.append("lookup")
        return f"value of {key}"

    @registry.tool(read_only=True)
    def flaky(value: str) -> str:
        """Always fails, retryably."""
        attempts.append("flaky")
        raise ToolExecutionError("upstream is down", retryable=True)

    @registry.tool(read_only=True)
    def store(value: str) -> str:
        """Store a value."""
        attempts.append("store")
        return "stored"

    @registry.tool(read_only=True)
    async def slow(key: str) -> str:
        """Takes a minute."""
        attempts.append("slow")
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.append("slow")
            raise
        return "late"

    fast_retry = ExecutionPolicy(retry=RetrySpec(initial_interval=0.1, maximum_attempts=3))
    registry.flow(
        "fragile",
        "Looks up, transforms, stores.",
        nodes={
            "get": FlowNode(tool="lookup", arguments={"key": "$args.key"}),
            "shape": FlowNode(
                tool="flaky", arguments={"value": "$nodes.get.output"}, policy=fast_retry
            ),
            "put": FlowNode(tool="store", arguments={"value": "$nodes.shape.output"}),
        },
    )
    registry.flow(
        "bounded",
        "Runs a slow step under a 2 s bound.",
        nodes={
            "get": FlowNode(tool="lookup", arguments={"key": "$args.key"}),
            "wait": FlowNode(tool="slow", arguments={"key": "$args.key"}),
            "put": FlowNode(tool="store", arguments={"value": "$nodes.wait.output"}),
        },
        timeout=2,
    )
    return registry


async def run_one_call(
    client: Client, task_queue: str, tmp_path: Path, registry: ToolRegistry, tool: str
) -> tuple[Any, Any, dict[str, str]]:
    """Run one call of `tool`; its tool message, the flow's handle and its node statuses."""
    model = write_script(tmp_path, [calls(("c1", tool, {"key": "k"})), answer("over")])
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start(
            "go", config=AgentConfig(model=model), run_id=f"{tool}-{task_queue}"
        )
        result = await run.result()
        assert result.status == RunStatus.COMPLETED, result.reason
        [message] = [m for m in await run.conversation() if m.role == "tool"]
        child = client.get_workflow_handle(f"{run.run_id}.c1")
        for handle in (run.handle, child):
            await assert_not_wedged(handle)
        reports = {r.node: r.status for r in await child.query(FlowWorkflow.nodes)}
        return message, child, reports


async def test_a_node_failing_after_its_retries_fails_the_flow_naming_the_node(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    attempts: list[str] = []
    registry = failing_registry(attempts, [])
    message, child, reports = await run_one_call(client, task_queue, tmp_path, registry, "fragile")
    assert message.is_error and message.tool_call_id == "c1" and message.name == "fragile"
    assert "node 'shape' (tool 'flaky') failed" in message.content
    assert "upstream is down" in message.content and "after 3 attempts" in message.content
    # The node's own policy (3 attempts) ran; the node after it never started.
    assert attempts == ["lookup", "flaky", "flaky", "flaky"]
    described = await child.describe()
    assert described.status == WorkflowExecutionStatus.FAILED
    assert reports == {"get": "completed", "shape": "failed", "put": "not_started"}


async def test_the_flow_timeout_bounds_the_whole_flow(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    attempts: list[str] = []
    cancelled: list[str] = []
    registry = failing_registry(attempts, cancelled)
    message, child, reports = await run_one_call(client, task_queue, tmp_path, registry, "bounded")
    assert message.is_error and "timed out" in message.content
    assert "2 s timeout" in message.content and "nodes running: wait" in message.content
    assert "not started: put" in message.content
    # The running node was cancelled (it acknowledged), and the next one never ran.
    assert cancelled == ["slow"] and "store" not in attempts
    assert reports == {"get": "completed", "wait": "cancelled", "put": "not_started"}
    assert (await child.describe()).status == WorkflowExecutionStatus.FAILED


async def test_cancelling_the_run_cancels_the_flow_and_its_running_node(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    attempts: list[str] = []
    cancelled: list[str] = []
    registry = failing_registry(attempts, cancelled)
    model = write_script(tmp_path, [calls(("c1", "bounded", {"key": "k"})), answer("never")])
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start(
            "go", config=AgentConfig(model=model), run_id=f"cancel-{task_queue}"
        )
        child = client.get_workflow_handle(f"{run.run_id}.c1")
        for _ in range(200):
            if "slow" in attempts:
                break
            await asyncio.sleep(0.05)
        await run.cancel("the user changed their mind")
        result = await run.result()
        assert result.status == RunStatus.CANCELLED
        assert cancelled == ["slow"] and "store" not in attempts
        assert (await child.describe()).status == WorkflowExecutionStatus.CANCELED
        reports = {r.node: r.status for r in await child.query(FlowWorkflow.nodes)}
        assert reports == {"get": "completed", "wait": "cancelled", "put": "not_started"}
        for handle in (run.handle, child):
            await assert_not_wedged(handle)


async def test_a_node_needing_approval_makes_the_flow_call_wait_for_a_person(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    published: list[str] = []
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    def draft(topic: str) -> str:
        """Draft a post."""
        return f"post about {topic}"

    @registry.tool(approval=True, idempotent=True)
    def publish(text: str) -> str:
        """Publish a post (needs approval)."""
        published.append(text)
        return "published"

    registry.flow(
        "post",
        "Draft and publish a post.",
        nodes={
            "d": FlowNode(tool="draft", arguments={"topic": "$args.topic"}),
            "p": FlowNode(tool="publish", arguments={"text": "$nodes.d.output"}),
        },
    )
    model = write_script(tmp_path, [calls(("c1", "post", {"topic": "flows"})), answer("done")])
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start(
            "post it", config=AgentConfig(model=model), run_id=f"approve-{task_queue}"
        )
        snapshot = await wait_for(run, lambda s: bool(s.pending_approvals))
        assert [a.tool for a in snapshot.pending_approvals] == ["post"]
        assert published == []  # nothing ran before the person decided
        await run.approve("c1", decider="alice")
        result = await run.result()
        assert result.status == RunStatus.COMPLETED
        assert published == ["post about flows"]
        await assert_not_wedged(run.handle)
