"""An artifact store that cannot be written never makes a side effect happen twice.

The store here really fails, also for root (tests run as root, so a chmod would not
stop the write): its root path is a regular file, so every write raises
`NotADirectoryError`, like a disk that is full or mounted read-only would raise `OSError`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowFailureError, WorkflowHistory

from durable_tools import ArtifactRef, DurableTools, Message, RunStatus, ToolRegistry
from durable_tools._activities._types import MODEL_ACTIVITY
from durable_tools.tools import FileSystemArtifactStore
from support import answer, assert_not_wedged, calls, running_worker, write_script

OUTPUT_BYTES = 60_000  # far over the default 16 KB inline limit


def unwritable_store(tmp_path: Path) -> FileSystemArtifactStore:
    blocker = tmp_path / "artifacts-is-a-file"
    blocker.write_text("not a directory")
    return FileSystemArtifactStore(blocker)


class ToolOutputsFail:
    """Conversation snapshots go to a working store, tool outputs to an unwritable one
    (as when only large writes hit a full disk), so only the tool's output is lost."""

    def __init__(self, good: FileSystemArtifactStore, bad: FileSystemArtifactStore) -> None:
        self.good, self.bad = good, bad

    def put(self, data: bytes, media_type: str = "application/octet-stream") -> ArtifactRef:
        framework = media_type.startswith("application/vnd.durable-tools.")
        return (self.good if framework else self.bad).put(data, media_type)

    def get(self, ref: ArtifactRef) -> bytes:
        return self.good.get(ref)


def activity_attempts(history: WorkflowHistory, activity_type: str) -> list[int]:
    """The attempt number of every started activity of this type (the last one per
    schedule is recorded, so [1] means exactly one attempt ran)."""
    scheduled: dict[int, str] = {}
    attempts = []
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            scheduled[event.event_id] = (
                event.activity_task_scheduled_event_attributes.activity_type.name
            )
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            attributes = event.activity_task_started_event_attributes
            if scheduled.get(attributes.scheduled_event_id) == activity_type:
                attempts.append(attributes.attempt)
    return attempts


async def test_a_tool_whose_big_output_cannot_be_stored_runs_once(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    runs: list[str] = []
    tools = ToolRegistry()

    @tools.tool()  # mutating and not idempotent: running it twice is the harm
    def create_order(item: str) -> str:
        """Create an order and return a long receipt."""
        runs.append(item)
        return f"created order 42 for {item}\n" + "receipt line\n" * (OUTPUT_BYTES // 13)

    store = ToolOutputsFail(FileSystemArtifactStore(tmp_path / "good"), unwritable_store(tmp_path))
    model = write_script(
        tmp_path, [calls(("c1", "create_order", {"item": "lamp"})), answer("ordered")]
    )
    async with running_worker(client, tools, task_queue, artifact_store=store):
        run = await DurableTools(client, task_queue).start("order a lamp", model=model)
        result = await run.result()
        timeline = await run.timeline()
        conversation = await run.conversation()
        events = await run.events()

    assert runs == ["lamp"]  # before the fix: 5 runs, one per retried attempt
    assert result.status == RunStatus.COMPLETED and result.final_answer == "ordered"
    history = await run.handle.fetch_history()
    assert activity_attempts(history, "create_order") == [1]
    await assert_not_wedged(run.handle)

    (record,) = timeline
    assert record.status == "completed" and record.attempts == 1
    assert record.error_kind == "ToolOutputLost"
    assert "completed, but its output could not be kept" in (record.result or "")
    assert any(e.event == "tool.completed" and e.detail == "ToolOutputLost" for e in events)

    reply = next(m for m in conversation if m.role == "tool")
    assert isinstance(reply, Message) and reply.content is not None
    assert "completed, but its output could not be kept" in reply.content
    assert "NotADirectoryError" in reply.content  # why, for the operator reading the run
    assert "do not call it again" in reply.content
    assert "created order 42 for lamp" in reply.content  # the start of the output is kept
    assert len(reply.content.encode()) <= 16_000


async def test_a_conversation_snapshot_that_cannot_be_saved_ends_the_run(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    model = write_script(tmp_path, [answer("hello")])
    async with running_worker(
        client, ToolRegistry(), task_queue, artifact_store=unwritable_store(tmp_path)
    ):
        run = await DurableTools(client, task_queue).start("say hello", model=model)
        with pytest.raises(WorkflowFailureError) as failed:
            await run.result()
        snapshot = await run.status()

    message = str(failed.value.cause)
    assert "conversation snapshot could not be saved" in message
    assert "NotADirectoryError" in message and "artifacts-is-a-file" in message
    assert snapshot.status == RunStatus.FAILED
    assert "conversation snapshot could not be saved" in (snapshot.reason or "")
    history = await run.handle.fetch_history()
    assert activity_attempts(history, MODEL_ACTIVITY) == [1]  # no retry loop
    await assert_not_wedged(run.handle)
