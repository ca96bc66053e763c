"""A sub-agent's execution options, honoured by its child workflow (real dev server): a
timeout ends a child that runs too long and the parent's model is told so; a task queue
runs the child on that queue's workers."""

from __future__ import annotations

import asyncio
from pathlib import Path

from temporalio.client import Client, WorkflowExecutionStatus

from durable_tools import AgentConfig, AgentRun, DurableTools, Message, RunStatus, ToolRegistry
from durable_tools.tools import ErrorKind
from support import answer, assert_not_wedged, calls, running_worker, write_script


def tool_replies(messages: list[Message]) -> list[str]:
    return [m.content or "" for m in messages if m.role == "tool"]


async def test_a_subagent_that_runs_too_long_is_ended_and_the_model_told(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    gate = asyncio.Event()  # never set while the child runs: only the timeout can end it
    started: list[str] = []
    registry = ToolRegistry()

    @registry.tool(read_only=True, local=False)
    async def dig(topic: str) -> str:
        """Research a topic for a long time."""
        started.append(topic)
        await gate.wait()
        return "found it"

    child_model = write_script(tmp_path, [calls(("d1", "dig", {"topic": "x"})), answer("late")])
    registry.subagent(
        AgentConfig(name="digger", model=child_model),
        name="researcher",
        description="Researches a topic.",
        start_to_close_timeout=2,
    )
    parent_model = write_script(
        tmp_path, [calls(("r1", "researcher", {"task": "dig"})), answer("gave up on it")]
    )
    try:
        async with running_worker(client, registry, task_queue):
            run = await DurableTools(client, task_queue).start("delegate", model=parent_model)
            result = await asyncio.wait_for(run.result(), 60)
            replies = tool_replies(await run.conversation())
            timeline = await run.timeline()
            child = AgentRun(client, f"{run.run_id}.r1")
            described = await child.handle.describe()
            await assert_not_wedged(run.handle)
    finally:
        gate.set()
    assert result.status == RunStatus.COMPLETED and result.final_answer == "gave up on it"
    assert described.status == WorkflowExecutionStatus.TIMED_OUT
    assert len(replies) == 1
    assert f"sub-agent run {child.run_id} did not finish within its timeout" in replies[0]
    assert "was ended" in replies[0] and "may have taken effect" in replies[0]
    assert timeline[0].status == "failed"
    assert timeline[0].error_kind == ErrorKind.TIMEOUT.value


async def test_a_subagent_runs_on_its_task_queue(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    children_queue = f"{task_queue}-children"
    registry = ToolRegistry()
    child_model = write_script(tmp_path, [answer("the child's answer")])
    registry.subagent(
        AgentConfig(name="helper", model=child_model),
        name="helper",
        description="Helps.",
        task_queue=children_queue,
    )
    parent_model = write_script(
        tmp_path, [calls(("h1", "helper", {"task": "help"})), answer("thanks")]
    )
    async with (
        running_worker(client, registry, task_queue),
        running_worker(client, registry, children_queue),
    ):
        run = await DurableTools(client, task_queue).start("delegate", model=parent_model)
        result = await asyncio.wait_for(run.result(), 60)
        replies = tool_replies(await run.conversation())
        described = await AgentRun(client, f"{run.run_id}.h1").handle.describe()
        parent = await run.handle.describe()
    assert result.status == RunStatus.COMPLETED and result.final_answer == "thanks"
    assert "the child's answer" in replies[0]
    assert described.task_queue == children_queue and parent.task_queue == task_queue
