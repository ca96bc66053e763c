"""Flows against a real dev server: one tool call, a child workflow, one activity a node."""

from __future__ import annotations

from pathlib import Path

from flow_tools import Calls, diamond_registry
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter

from durable_tools.client import DurableTools
from durable_tools.workflows import AgentConfig, RunStatus
from support import (
    answer,
    assert_not_wedged,
    calls,
    running_worker,
    scheduled_activities,
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
