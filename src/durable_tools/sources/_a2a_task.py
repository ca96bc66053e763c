"""The task an A2A call follows, as the agent's events so far describe it.

`TaskTracker` folds streamed events (or a polled `Task`) into the task's state, artifacts
and status text, reports each change as heartbeat progress, and turns the final state into
the tool's result or a classified error.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from a2a.types import Artifact, Message, Part, StreamResponse, Task, TaskState
from google.protobuf.json_format import MessageToDict

from durable_tools.tools._context import ToolContext
from durable_tools.tools._errors import ToolExecutionError

__all__ = ["TASK_KEY", "TaskTracker"]

_FINAL = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
    }
)
_INTERRUPTED = frozenset({TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED})
_MAX_PROGRESS_TEXT = 500
TASK_KEY = "a2a_task_id"
"""The heartbeat-details key under which a call records the task it follows."""


def _state_name(state: int) -> str:
    name = TaskState.Name(state)  # type: ignore[arg-type]
    return name.removeprefix("TASK_STATE_").lower().replace("_", "-")


def _part_text(part: Part) -> str:
    if part.HasField("text"):
        return part.text
    if part.HasField("data"):
        return json.dumps(MessageToDict(part.data), ensure_ascii=False, sort_keys=True)
    label = part.filename or "file"
    media = f" ({part.media_type})" if part.media_type else ""
    if part.HasField("url"):
        return f"[{label}{media}: {part.url}]"
    if part.HasField("raw"):
        return f"[{label}{media}: {len(part.raw)} bytes, not shown]"
    return ""


def _parts_text(parts: Sequence[Part]) -> str:
    return "\n".join(t for t in (_part_text(p) for p in parts) if t)


@dataclass
class TaskTracker:
    """The task as the events so far describe it."""

    ctx: ToolContext
    task_id: str = ""
    context_id: str = ""
    state: int = TaskState.TASK_STATE_UNSPECIFIED
    status_text: str = ""
    artifacts: dict[str, Artifact] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    reply: Message | None = None
    """A direct message answer (no task)."""
    reported: tuple[int, str] | None = None

    @property
    def done(self) -> bool:
        """The agent answered, or the task reached a final or interrupted state."""
        return self.reply is not None or self.state in _FINAL or self.state in _INTERRUPTED

    def apply(self, event: StreamResponse) -> None:
        """Fold one streamed event in."""
        kind = event.WhichOneof("payload")
        if kind == "task":
            self.apply_task(event.task)
        elif kind == "message":
            self.reply = event.message
        elif kind == "status_update":
            status = event.status_update
            self._ids(status.task_id, status.context_id)
            self._status(status.status.state, status.status.message)
        elif kind == "artifact_update":
            artifact = event.artifact_update
            self._ids(artifact.task_id, artifact.context_id)
            self._artifact(artifact.artifact, append=artifact.append)

    def apply_task(self, task: Task) -> None:
        """Fold a whole task (the first answer, or a `GetTask` poll) in."""
        self._ids(task.id, task.context_id)
        for artifact in task.artifacts:
            self._artifact(artifact, append=False)
        self._status(task.status.state, task.status.message)

    def _ids(self, task_id: str, context_id: str) -> None:
        self.task_id = task_id or self.task_id
        self.context_id = context_id or self.context_id

    def _artifact(self, artifact: Artifact, *, append: bool) -> None:
        key = artifact.artifact_id or f"#{len(self.order)}"
        if key not in self.artifacts:
            self.order.append(key)
            self.artifacts[key] = Artifact()
            self.artifacts[key].CopyFrom(artifact)
        elif append:
            self.artifacts[key].parts.extend(artifact.parts)
        else:
            self.artifacts[key].CopyFrom(artifact)

    def _status(self, state: int, message: Message) -> None:
        if state != TaskState.TASK_STATE_UNSPECIFIED:
            self.state = state
        text = _parts_text(message.parts)
        if text:
            self.status_text = text
        self._report()

    def _report(self) -> None:
        # Heartbeat details: what a person watching the activity reads, and the task id a
        # retried attempt resumes from. Only when something changed.
        now = (self.state, self.status_text)
        if not self.task_id or now == self.reported:
            return
        self.reported = now
        state, text = _state_name(self.state), self.status_text[:_MAX_PROGRESS_TEXT]
        self.ctx.progress(
            f"{state}: {text}" if text else state,
            details={
                TASK_KEY: self.task_id,
                "a2a_context_id": self.context_id,
                "state": state,
                "message": text,
            },
        )

    def result(self, label: str) -> str:
        """The tool's result for the task as it ended.

        Raises:
            ToolExecutionError: The task needs authorization, failed, was rejected or
                canceled.
        """
        if self.reply is not None:
            return _parts_text(self.reply.parts) or f"{label} answered with an empty message."
        ids = f"task {self.task_id}, context {self.context_id}"
        if self.state == TaskState.TASK_STATE_COMPLETED:
            texts = [_parts_text(self.artifacts[k].parts) for k in self.order]
            text = "\n\n".join(t for t in texts if t) or self.status_text
            return text or f"{label} completed the task without output."
        if self.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            # Not an error: the model reads the question and may answer it by calling the
            # tool again with the same task_id.
            return (
                f"{label} needs more input before it can go on ({ids}): "
                f"{self.status_text or '(no question given)'}\n"
                f"To answer, call this tool again with task_id={self.task_id!r} and "
                f"context_id={self.context_id!r}."
            )
        said = f": {self.status_text}" if self.status_text else ""
        if self.state == TaskState.TASK_STATE_AUTH_REQUIRED:
            raise ToolExecutionError(
                f"{label} needs authorization it was not given ({ids}){said}",
                details={"task_id": self.task_id, "state": "auth-required"},
            )
        state = _state_name(self.state)
        raise ToolExecutionError(
            f"{label} {'rejected' if state == 'rejected' else 'ended'} the task "
            f"({ids}) as {state}{said}",
            retryable=False,
            details={"task_id": self.task_id, "state": state},
        )
