"""Approval metrics recorded from workflow code, through the SDK's replay-aware meter.

`workflow.metric_meter()` skips recording while a workflow replays history, so a run that
resumes on another worker does not count its approvals twice. The meter feeds the worker's
`temporalio.runtime.Runtime` (its Prometheus endpoint, see `durable_tools.telemetry`);
with no metrics configured on the runtime it is a no-op. Recording adds no commands.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from temporalio import workflow

from durable_tools.protocol._wait_types import ApprovalDecision

__all__ = [
    "APPROVALS_DECIDED",
    "APPROVALS_REQUESTED",
    "APPROVAL_WAIT",
    "approval_decided",
    "approval_requested",
]

APPROVALS_REQUESTED = "durable_tools_approvals_requested"
APPROVALS_DECIDED = "durable_tools_approvals_decided"
APPROVAL_WAIT = "durable_tools_approval_wait"


def approval_requested(tool: str) -> None:
    """Count a call that now waits on a person (pending = requested - decided)."""
    workflow.metric_meter().create_counter(
        APPROVALS_REQUESTED, "tool calls that started waiting for an approval"
    ).add(1, {"tool": tool})


def approval_decided(tool: str, decision: ApprovalDecision, requested_at: datetime) -> None:
    """Count a decision and how long the call waited for it (workflow time, in ms)."""
    decider = decision.decider
    outcome = "approved" if decision.approve else "expired" if decider == "deadline" else "denied"
    by = (
        "auto" if decider.startswith("auto:") else "deadline" if decider == "deadline" else "person"
    )
    attributes = {"tool": tool, "outcome": outcome, "decided_by": by}
    meter = workflow.metric_meter()
    meter.create_counter(APPROVALS_DECIDED, "approval decisions").add(1, attributes)
    waited = max(workflow.now() - requested_at, timedelta(0))
    meter.create_histogram_timedelta(
        APPROVAL_WAIT, "time a tool call waited on its approval", unit="duration"
    ).record(waited, attributes)
