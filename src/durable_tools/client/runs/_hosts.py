"""Where a workflow holds a run's handlers: an agent run's own names, or a host's under a
prefix (an embedded `AgentLoop`, a `ToolRuntime` in a plain workflow or under an agent
framework). The CLI's `pending` and the inbox find a host's prefix here, from the handler
names its worker reports (Temporal's `__temporal_workflow_metadata` query)."""

from __future__ import annotations

import asyncio

from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import Client, WorkflowExecution, WorkflowQueryFailedError
from temporalio.service import RPCError

from durable_tools.workflows import RunSnapshot

__all__ = ["AGENT_WORKFLOW", "METADATA_TIMEOUT", "handler_prefixes", "waits_on"]

AGENT_WORKFLOW = "AgentWorkflow"
"""The workflow type of an agent run: its handlers carry no prefix."""
METADATA_TIMEOUT = 3.0
"""Seconds a host's worker has to report its handler names."""


async def handler_prefixes(
    client: Client, execution: WorkflowExecution, timeout: float = METADATA_TIMEOUT
) -> list[str]:
    """The prefixes under which a workflow holds a run's handlers: `[""]` for an agent
    run; for a host of its own (an embedded `AgentLoop`, a `ToolRuntime`), each prefix `P`
    its worker lists both `P + "status"` and `P + "decide"` for, sorted (none when no
    worker answers in `timeout` seconds)."""
    if execution.workflow_type == AGENT_WORKFLOW:
        return [""]
    handle = client.get_workflow_handle(execution.id, run_id=execution.run_id)
    try:
        metadata = await asyncio.wait_for(
            handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata), timeout
        )
    except (WorkflowQueryFailedError, RPCError, TimeoutError):
        return []
    definition = metadata.definition
    updates = {d.name for d in definition.update_definitions}
    queries = [d.name for d in definition.query_definitions]
    return sorted(
        name.removesuffix("status")
        for name in queries
        if name.endswith("status") and name.removesuffix("status") + "decide" in updates
    )


def waits_on(snapshot: RunSnapshot) -> bool:
    """Whether a run (or a host's runtime) has calls waiting on someone: an approver (its
    own, or a running sub-agent's), the user's grant or answer, a callback client."""
    return bool(
        snapshot.pending_approvals
        or snapshot.subagent_approvals
        or snapshot.pending_authorizations
        or snapshot.pending_inputs
        or snapshot.pending_callbacks
    )
