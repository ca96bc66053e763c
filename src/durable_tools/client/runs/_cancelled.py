"""How a run that closed CANCELED ended, read back for `AgentRun.result()`.

The run's own state (its `status` query) says it best, but a query needs a worker: with
none polling, the server holds the query for about 30 seconds before it fails. So the
query is asked briefly, and without an answer the reason comes from the history: the
cancellation request the run turned into its clean end carries it.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio.client import WorkflowHandle, WorkflowQueryFailedError
from temporalio.exceptions import CancelledError
from temporalio.service import RPCError

from durable_tools.workflows import AgentResult, RunSnapshot, RunStatus

__all__ = ["CANCELLED_QUERY_SECONDS", "cancelled_result"]

CANCELLED_QUERY_SECONDS = 5.0
"""How long `result()` waits for a worker to answer an ended run's `status` query."""


async def cancelled_result(handle: WorkflowHandle[Any, Any], cause: CancelledError) -> AgentResult:
    """How the run behind `handle` (closed CANCELED with `cause`) ended."""
    try:
        snapshot = await handle.query(
            "status",
            result_type=RunSnapshot,
            rpc_timeout=timedelta(seconds=CANCELLED_QUERY_SECONDS),
        )
    except (WorkflowQueryFailedError, RPCError):
        reason = await _requested_reason(handle)
        return AgentResult(
            status=RunStatus.CANCELLED, reason=reason or cause.message or "cancelled"
        )
    return AgentResult(
        status=RunStatus.CANCELLED,
        final_answer=snapshot.final_answer,
        reason=snapshot.reason,
        turns=snapshot.turn,
        tool_calls=snapshot.tool_calls,
    )


async def _requested_reason(handle: WorkflowHandle[Any, Any]) -> str | None:
    """The reason of the run's first cancellation request (the one that ended it)."""
    try:
        async for event in handle.fetch_history_events():
            if event.HasField("workflow_execution_cancel_requested_event_attributes"):
                return event.workflow_execution_cancel_requested_event_attributes.cause or None
    except RPCError:
        return None
    return None
