"""Every name a run's audit stream can carry, in one place.

`RunState.event` takes only an `EventName`, so mypy refuses a name built by formatting or a
typo (`policy.denyed` once reached the stream that way, and alerts on `policy.denied` never
fired); `tests/workflows/test_event_names.py` checks that this list and the table in
`docs/events.md` name the same events.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, Literal, get_args

from durable_tools.protocol._types import RunStatus

__all__ = ["EVENT_NAMES", "MISSED_EVENT", "RUN_ENDED", "EventName"]

EventName = Literal[
    # run
    "run.started",
    "run.steered",
    "run.steer_refused",
    "run.cancel_requested",
    "run.continuing_as_new",
    "run.continued",
    "run.carried_less",
    "run.completed",
    "run.limit_reached",
    "run.failed",
    "run.cancelled",
    # session
    "session.message",
    "session.answered",
    "session.retried",
    "session.close_requested",
    "session.closed",
    # tool
    "tool.started",
    "tool.retrying",
    "tool.completed",
    "tool.failed",
    "tool.cancelled",
    "tool.outcome_unknown",
    "tool.ended_late",
    "tool.ended_run",
    "tool.skipped",
    "tool.invalid_args",
    "tool.unauthorized",
    "tool.budget_exhausted",
    "tool.policy_exhausted",
    "tool.search",
    "tool.event",
    # sub-agents
    "subagent.waiting",
    "subagent.notice_refused",
    # approval, policy, grants, auto mode
    "approval.requested",
    "approval.partial",
    "approval.decided",
    "approval.rejected",
    "approval.escalated",
    "approval.expired",
    "approval.withdrawn",
    "approval.refitted",
    "policy.allowed",
    "policy.denied",
    "policy.changed",
    "grant.created",
    "grant.revoked",
    "grant.set_aside",
    "auto.evaluated",
    "auto.escalated",
    "auto.failed",
    "auto.cancelled",
    "auto.no_criteria",
    # authorization
    "authorization.requested",
    "authorization.completed",
    "authorization.failed",
    "authorization.expired",
    "authorization.ignored",
    "authorization.reissued",
    # callback tools and questions from MCP servers
    "callback.published",
    "callback.answered",
    "callback.expired",
    "callback.store_failed",
    "input.requested",
    "input.answered",
    "input.expired",
    # structured output, model, delivery
    "output.accepted",
    "output.invalid",
    "model.usage",
    "model.call_id_shortened",
    "model.snapshot_missing",
    "model.fallback",
    # the catalog of a running run
    "catalog.changed",
    "catalog.update_failed",
    # context compaction
    "context.compacted",
    "context.compaction_skipped",
    "context.too_long",
    "notification.failed",
    "events.missed",
]
"""A name the run's audit stream (`RunEvent.event`) can carry."""

EVENT_NAMES: Final = frozenset(get_args(EventName))

MISSED_EVENT: Final[EventName] = "events.missed"
"""Emitted by an event follower that fell behind (never by the run itself)."""

RUN_ENDED: Final[Mapping[RunStatus, EventName]] = MappingProxyType(
    {
        RunStatus.COMPLETED: "run.completed",
        RunStatus.LIMIT_REACHED: "run.limit_reached",
        RunStatus.FAILED: "run.failed",
        RunStatus.CANCELLED: "run.cancelled",
    }
)
"""The event that closes a run's stream, by how it ended."""
