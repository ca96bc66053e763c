"""A run failed by an activity, on a real dev server: its catalog failing at its start
(tools the worker does not have), or the model inside a later message of a session. A
session answers the message in flight with the error (`SessionFailed`) and closes failed;
a plain run closes failed with the same reason. None fails a workflow task (the message's
update is finished before the run ends)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowUpdateFailedError,
)
from temporalio.exceptions import ApplicationError

from durable_tools import AgentConfig, DurableTools, RunStatus, ToolRegistry
from support import answer, assert_replays, running_worker, workflow_task_failures, write_script

GUARD_SECONDS = 120
"""How long a call may wait before the test says the run is stuck (never a timing claim:
before the fix the message's answer never came)."""


def one_tool() -> ToolRegistry:
    tools = ToolRegistry()

    @tools.tool(read_only=True)
    def lookup(q: str) -> str:
        """Look something up."""
        return f"found {q}"

    return tools


def causes(error: BaseException | None) -> list[str]:
    """The messages of an error and of every cause under it, outermost first."""
    found: list[str] = []
    while error is not None:
        found.append(getattr(error, "message", None) or str(error))
        error = error.__cause__ or getattr(error, "cause", None)
    return found


@pytest.mark.parametrize(
    ("session", "wanted"),
    [(True, ["lookup", "no_such_tool", "Lookup"]), (False, ["no_such_tool"])],
    ids=["a-session-answers-its-first-message-with-the-error", "a-plain-run"],
)
async def test_a_run_whose_catalog_fails_closes_failed_naming_the_tools(
    client: Client, task_queue: str, tmp_path: Path, session: bool, wanted: list[str]
) -> None:
    model = write_script(tmp_path, [answer("never asked")])
    tools = DurableTools(client, task_queue)
    config = AgentConfig(model=model, tools=wanted)
    failed: pytest.ExceptionInfo[WorkflowUpdateFailedError] | None = None
    async with running_worker(client, one_tool(), task_queue):
        if session:
            session_id = f"chat-{uuid.uuid4().hex[:8]}"
            with pytest.raises(WorkflowUpdateFailedError) as failed:
                # The catalog fails in the workflow task that takes the message: `send`
                # (update-with-start) gets the error at once.
                await asyncio.wait_for(tools.send(session_id, "hi", config=config), GUARD_SECONDS)
            run = tools.run(session_id)
        else:
            run = await tools.start("hi", config=config)
        with pytest.raises(WorkflowFailureError) as ended:
            await asyncio.wait_for(run.handle.result(), GUARD_SECONDS)
        described = await run.handle.describe()
        snapshot = await run.status()
        history = await run.handle.fetch_history()
    if failed is not None:
        cause = failed.value.cause
        assert isinstance(cause, ApplicationError) and cause.non_retryable
        assert cause.type == "SessionFailed"
        assert "tools this worker does not have: Lookup, no_such_tool" in cause.message
        assert cause.message.count("no_such_tool") == 1
    assert described.status == WorkflowExecutionStatus.FAILED
    assert any("no_such_tool" in text for text in causes(ended.value))
    assert snapshot.status == RunStatus.FAILED
    assert snapshot.reason is not None and "no_such_tool" in snapshot.reason
    assert workflow_task_failures(history) == []
    await assert_replays(history)


async def test_a_model_failure_inside_a_later_message_answers_it_with_the_error(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    model = write_script(tmp_path, [answer("one")])
    tools = DurableTools(client, task_queue)
    session_id = f"chat-{uuid.uuid4().hex[:8]}"
    config = AgentConfig(model=model)
    async with running_worker(client, one_tool(), task_queue):
        first = await tools.send(session_id, "first", config=config)
        Path(model.split(":", 1)[1]).unlink()  # the model's next call fails for good
        with pytest.raises(WorkflowUpdateFailedError) as failed:
            await asyncio.wait_for(tools.run(session_id).send("second"), GUARD_SECONDS)
        run = tools.run(session_id)
        with pytest.raises(WorkflowFailureError):
            await asyncio.wait_for(run.handle.result(), GUARD_SECONDS)
        snapshot = await run.status()
        history = await run.handle.fetch_history()
    assert first.answer == "one"
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "SessionFailed"
    assert "message 2" in cause.message and cause.message.endswith(": file not found")
    assert snapshot.status == RunStatus.FAILED and snapshot.session is not None
    assert snapshot.session.messages == 2
    assert workflow_task_failures(history) == []
    await assert_replays(history)
