"""The flow workflow is total: junk input, impossible plans and outputs over the budget
end it with a clear failure, never a workflow task failing for ever."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowFailureError

from durable_tools import AgentConfig, DurableTools, RunStatus, ToolRegistry
from durable_tools.flows import FlowNode, FlowPlan
from durable_tools.tools import InMemoryArtifactStore
from support import answer, assert_not_wedged, calls, running_worker, write_script


def big_registry() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    def produce(size: int) -> str:
        """A text of `size` characters."""
        return "x" * size

    @registry.tool(read_only=True)
    def measure(text: str) -> int:
        """The length of a text."""
        return len(text)

    @registry.tool(read_only=True)
    def record(data: dict[str, Any]) -> dict[str, Any]:
        """Echo a free-form object."""
        return data

    registry.flow(
        "measure_big",
        "Produce a text, then measure it.",
        nodes={
            "make": FlowNode(tool="produce", arguments={"size": "$args.size"}),
            "len": FlowNode(tool="measure", arguments={"text": "$nodes.make.output"}),
        },
        node_output_limit_bytes=1_000,
    )
    registry.flow(
        "produce_big",
        "Produce a text: the model sees it as it would see the tool's own output.",
        nodes={"make": FlowNode(tool="produce", arguments={"size": "$args.size"})},
    )
    registry.flow(
        "missing_field",
        "Echo an object, then read a field it does not have.",
        nodes={
            "echo": FlowNode(tool="record", arguments={"data": {"a": 1}}),
            "len": FlowNode(tool="measure", arguments={"text": "$nodes.echo.output.b"}),
        },
    )
    return registry


async def one_call(
    client: Client, task_queue: str, tmp_path: Path, tool: str, arguments: dict[str, Any]
) -> Any:
    model = write_script(tmp_path, [calls(("c1", tool, arguments)), answer("over")])
    store = InMemoryArtifactStore()
    async with running_worker(client, big_registry(), task_queue, artifact_store=store):
        run = await DurableTools(client, task_queue).start(
            "go", config=AgentConfig(model=model), run_id=f"{tool}-{task_queue}"
        )
        result = await run.result()
        assert result.status == RunStatus.COMPLETED, result.reason
        [message] = [m for m in await run.conversation() if m.role == "tool"]
        for handle in (run.handle, client.get_workflow_handle(f"{run.run_id}.c1")):
            await assert_not_wedged(handle)
        return message


async def test_an_output_over_the_node_budget_fails_its_node_clearly(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    message = await one_call(client, task_queue, tmp_path, "measure_big", {"size": 5_000})
    assert message.is_error
    assert "node 'make' (tool 'produce') failed" in message.content
    assert "over the flow's node budget of 1,000 bytes" in message.content
    assert "memory://" in message.content  # where the whole output was kept


async def test_the_flow_output_is_stored_by_reference_like_a_tool_output(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    message = await one_call(client, task_queue, tmp_path, "produce_big", {"size": 50_000})
    assert not message.is_error
    assert len(message.content.encode()) <= 16_000
    assert "[output truncated" in message.content and "memory://" in message.content


async def test_a_field_missing_at_run_time_fails_the_node_that_reads_it(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    message = await one_call(client, task_queue, tmp_path, "missing_field", {})
    assert message.is_error
    assert "node 'len' (tool 'measure') failed" in message.content
    assert "$nodes.echo.output.b has no value at 'b'" in message.content


@pytest.mark.parametrize(
    "junk",
    [
        {"plan": 3},
        "not an object",
        {"plan": {"name": "x", "nodes": [], "output": "$nodes.a.output"}},
    ],
)
async def test_junk_input_fails_the_flow_run_at_once(
    client: Client, task_queue: str, junk: Any
) -> None:
    async with running_worker(client, ToolRegistry(), task_queue):
        handle = await client.start_workflow(
            "FlowWorkflow", junk, id=f"junk-{uuid.uuid4()}", task_queue=task_queue
        )
        with pytest.raises(WorkflowFailureError):
            await handle.result()
        await assert_not_wedged(handle, allowed=0)


def hand_made(change: str) -> dict[str, Any]:
    """The `measure_big` flow's input, with its plan broken by hand in one way."""
    plan = FlowPlan.model_validate(big_registry().get("measure_big").spec.flow)
    first, second = plan.nodes
    if change == "loop":
        plan = plan.model_copy(
            update={"nodes": (first.model_copy(update={"after": ("len",)}), second)}
        )
    elif change == "unordered":  # reads a node it does not wait for
        plan = plan.model_copy(update={"nodes": (first, second.model_copy(update={"after": ()}))})
    elif change == "output":
        plan = plan.model_copy(update={"output": "$nodes.ghost.output"})
    elif change == "malformed":
        plan = plan.model_copy(update={"output": "$nodes..output"})
    return {
        "plan": plan.model_dump(mode="json"),
        "arguments": {"size": 3},
        "call_id": "c1",
        "idempotency_key": "by-hand/c1",
    }


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ("loop", "wait for each other and can never start"),
        ("unordered", "reads node 'make', which has not run"),
        ("output", "names node 'ghost', which has not run"),
        ("malformed", "is not a reference"),
    ],
)
async def test_a_hand_made_plan_that_cannot_work_fails_clearly(
    client: Client, task_queue: str, change: str, reason: str
) -> None:
    async with running_worker(client, big_registry(), task_queue):
        handle = await client.start_workflow(
            "FlowWorkflow", hand_made(change), id=f"bad-{uuid.uuid4()}", task_queue=task_queue
        )
        with pytest.raises(WorkflowFailureError) as caught:
            await handle.result()
        assert reason in str(caught.value.cause)
        await assert_not_wedged(handle, allowed=0)
