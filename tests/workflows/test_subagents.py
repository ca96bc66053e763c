"""Sub-agents: tools that run a child agent as a child workflow."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from temporalio.client import Client

from durable_tools import (
    AgentConfig,
    AgentRun,
    DurableTools,
    RunStatus,
    ToolRegistry,
    search_attributes as sa,
)
from durable_tools._activities._types import CATALOG_UPDATE_ACTIVITY
from durable_tools.tools._catalog_pack import CATALOG_PACKED_ACTIVITY
from support import (
    answer,
    calls,
    local_activity_types,
    running_worker,
    scheduled_activities,
    write_script,
)


def registry_with_researcher(tmp_path: Path, executed: list[Any]) -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(approval=True, idempotent=True)
    def publish(text: str) -> str:
        """Publish a text (needs approval)."""
        executed.append(text)
        return "published"

    child_model = write_script(
        tmp_path,
        [
            # The child tries to nest another sub-agent: hidden at depth 1.
            calls(("nested", "researcher", {"task": "recurse"})),
            calls(("pub", "publish", {"text": "findings"})),
            answer("the child published its findings"),
        ],
    )
    registry.subagent(
        AgentConfig(name="researcher", model=child_model, instructions="You research."),
        name="researcher",
        description="Researches a topic and publishes the findings.",
    )
    return registry


async def wait_child_pending(run: AgentRun) -> list[tuple[str, Any]]:
    for _ in range(150):
        pending = await run.pending_approvals()
        if pending:
            return pending
        await asyncio.sleep(0.1)
    raise AssertionError("the sub-agent never asked for approval")


async def test_subagent_with_an_approval_inside_the_child(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    executed: list[Any] = []
    registry = registry_with_researcher(tmp_path, executed)
    parent_model = write_script(
        tmp_path, [calls(("r1", "researcher", {"task": "find things"})), answer("all done")]
    )
    async with running_worker(client, registry, task_queue):
        dt = DurableTools(client, task_queue)
        run = await dt.start("delegate", model=parent_model, run_id=f"parent-{task_queue}")
        pending = await wait_child_pending(run)
        child_id, approval = pending[0]
        assert child_id == f"{run.run_id}.r1" and approval.tool == "publish"
        # The child shows up among every run waiting on a person.
        for _ in range(50):
            if child_id in {s.run_id for s in await dt.pending()}:
                break
            await asyncio.sleep(0.2)
        else:
            raise AssertionError("child not listed as pending")
        # Decided through the parent: the decision reaches the child.
        await run.approve("pub", decider="alice")
        result = await run.result()
        child = AgentRun(client, child_id)
        child_replies = {
            m.tool_call_id: m.content or "" for m in await child.conversation() if m.role == "tool"
        }
        parent_replies = [m.content or "" for m in await run.conversation() if m.role == "tool"]
        timeline = await run.timeline()
    assert result.status == RunStatus.COMPLETED and result.final_answer == "all done"
    assert executed == ["findings"]
    assert "no tool of that name" in child_replies["nested"]
    assert "the child published its findings" in parent_replies[0]
    assert child_id in parent_replies[0]
    assert timeline[0].child_run_id == child_id and timeline[0].status == "completed"
    # The child starts at the parent's input revision: its catalog is a local activity, no
    # patch marker, and (no start attributes of its own) it upserts its status itself.
    child_history = await child.handle.fetch_history()
    # After its wait for the approval the child may read the catalog again (when the wait
    # lasted a second or more, as on a loaded machine): nothing else runs locally.
    first, *later = local_activity_types(child_history)
    assert first == CATALOG_PACKED_ACTIVITY and later in ([], [CATALOG_UPDATE_ACTIVITY]), later
    assert CATALOG_PACKED_ACTIVITY not in scheduled_activities(child_history)
    upserts = [
        e.upsert_workflow_search_attributes_event_attributes.search_attributes.indexed_fields
        for e in child_history.events
        if e.HasField("upsert_workflow_search_attributes_event_attributes")
    ]
    assert "TemporalChangeVersion" not in {k for fields in upserts for k in fields}
    assert upserts and upserts[0][sa.AGENT_STATUS.name].data == b'"running"'


async def test_a_child_cancelled_alone_is_reported_cancelled_not_failed(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # A person cancels only the sub-agent (`AgentRun.cancel`): it closes CANCELED in
    # Temporal. The parent once told its model the sub-agent "failed" and that
    # "repeating the same call will fail again".
    executed: list[Any] = []
    registry = registry_with_researcher(tmp_path, executed)
    parent_model = write_script(
        tmp_path, [calls(("r1", "researcher", {"task": "find things"})), answer("parent goes on")]
    )
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("delegate", model=parent_model)
        child_id, _ = (await wait_child_pending(run))[0]
        await AgentRun(client, child_id).cancel("not needed any more")
        result = await run.result()
        [record] = await run.timeline()
    assert result.status == RunStatus.COMPLETED  # the parent goes on
    assert record.error_kind == "Cancelled", record  # the call ended in error: cancelled
    assert record.result is not None and f"sub-agent run {child_id} was cancelled" in record.result
    assert "fail" not in record.result
    assert executed == []


async def test_cancelling_the_parent_cancels_the_child(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    executed: list[Any] = []
    registry = registry_with_researcher(tmp_path, executed)
    parent_model = write_script(
        tmp_path, [calls(("r1", "researcher", {"task": "find things"})), answer("never")]
    )
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("delegate", model=parent_model)
        child_id, _ = (await wait_child_pending(run))[0]
        await run.cancel("stop everything")
        result = await run.result()
        child = AgentRun(client, child_id)
        description = await child.handle.describe()
        child_status = await child.status()
    assert result.status == RunStatus.CANCELLED
    assert description.status is not None and description.status.name == "CANCELED"
    assert child_status.status == RunStatus.CANCELLED
    assert executed == []
