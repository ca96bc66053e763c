"""What a run records of itself: one record per tool call, and its audit stream's events."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from durable_tools.protocol._types import RunStatus
from durable_tools.tools._context import Identity
from durable_tools.tools._results import ArtifactRef
from durable_tools.tools._spec import Transport

__all__ = ["EventsPage", "RunEvent", "ToolCallRecord"]


class ToolCallRecord(BaseModel):
    """One line of a run's tool-call timeline."""

    call_id: str
    tool: str
    turn: int
    arguments: str
    """Abridged and redacted, for display."""
    status: Literal[
        "invalid",
        "awaiting_approval",
        "awaiting_authorization",
        "awaiting_input",
        "running",
        "completed",
        "failed",
        "denied",
        "skipped",
        "cancelled",
        "outcome_unknown",
    ]
    started_at: datetime | None = None
    finished_at: datetime | None = None
    result: str | None = None
    """Abridged result or error, for display."""
    error_kind: str | None = None
    attempts: int = 0
    child_run_id: str | None = None
    """For a sub-agent call: the child run's workflow id."""
    decided_by: str | None = None
    """Who approved or denied the call (`deadline` when it expired); None if never asked."""
    decided_at: datetime | None = None
    """When the decision was recorded."""
    decision_reason: str | None = None
    """The reason the decider gave, if any."""
    policy_layer: str | None = None
    """Which policy layer decided the call (`skip_all`, `safe_tool`, `allow_list`,
    `grant:<id>`, `auto`, `person`, ...); None for calls no layer had to decide."""
    artifacts: list[ArtifactRef] = Field(default_factory=list)
    """Outputs of the call kept in the artifact store (large outputs, images, binaries)."""
    details: Any = None
    """The tool's structured value when its JSON fits `MAX_DETAILS_BYTES`: for
    applications, never sent to the model."""
    parent_call_id: str | None = None
    """For a call made by a `run_script` script: the script's call id."""


class RunEvent(BaseModel):
    """One entry of a run's audit stream (`tool.started`, `approval.decided`, ...)."""

    at: datetime
    event: str
    call_id: str | None = None
    tool: str | None = None
    detail: str | None = None
    """A short text for people."""
    seq: int | None = None
    """The event's position in the run (0, 1, ...; continued across continue-as-new):
    the cursor of `events_since`. None in runs recorded before it existed."""
    identity: Identity | None = None
    """Who the run acts for (None when the run names nobody)."""
    transport: Transport | None = None
    """For tool events: how the call reached its tool."""
    attempt: int | None = None
    """For tool events: the attempt (counting retries made by Temporal and the workflow)."""
    duration_ms: float | None = None
    """For a call's closing event: workflow time from start to end, retries included."""
    error_kind: str | None = None
    """For a failed call: the `ErrorKind` value."""
    artifacts: list[ArtifactRef] = Field(default_factory=list)
    """Artifacts the call produced."""
    details: Any = None
    """For `tool.completed`: the tool's structured value (bounded, never sent to the model).
    For a sub-agent call's `tool.started`: `{"child_run_id": ...}`."""
    subagent_run: str | None = None
    """Set by the client on an event of a sub-agent shown in its parent's stream
    (`AgentRun.events`, `follow_events`): the sub-agent run that emitted it."""

    @property
    def started_subagent(self) -> str | None:
        """The sub-agent run this event says a call started (a sub-agent call's
        `tool.started`); None for any other event."""
        if self.event != "tool.started" or not isinstance(self.details, dict):
            return None
        child = self.details.get("child_run_id")
        return child if isinstance(child, str) and child else None


class EventsPage(BaseModel):
    """The answer of the `events_since` query: the kept events from a cursor on."""

    events: list[RunEvent] = Field(default_factory=list)
    next: int = 0
    """The cursor to ask from next time (the `seq` after the last event returned)."""
    total: int = 0
    """Events the run has emitted in all, continue-as-new included."""
    missed: int = 0
    """Events after the cursor that are no longer kept (the follower fell behind)."""
    status: RunStatus = RunStatus.RUNNING
    """The run's status when the page was read: a follower stops after an ending one."""
