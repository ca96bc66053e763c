"""Starting runs, approving, steering and reading them: the Python API behind the CLI."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime

from pydantic import BaseModel
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle
from temporalio.common import SearchAttributePair, TypedSearchAttributes

from durable_tools import search_attributes as sa
from durable_tools.connection import connect, resolve_namespace
from durable_tools.messages import Message
from durable_tools.server import ui_url
from durable_tools.tools._context import Identity
from durable_tools.worker import task_queue_from_env
from durable_tools.workflows import (
    AgentConfig,
    AgentInput,
    AgentResult,
    AgentWorkflow,
    ApprovalDecision,
    PendingApproval,
    RunEvent,
    RunSnapshot,
    RunStatus,
    ToolCallRecord,
)

__all__ = ["AgentRun", "DurableTools", "RunSummary"]

_WAITING = (RunStatus.AWAITING_APPROVAL.value, RunStatus.AWAITING_AUTHORIZATION.value)


class RunSummary(BaseModel):
    """One line of `durable-tools runs` / `pending`."""

    run_id: str
    agent: str | None
    status: str | None
    """The `AgentStatus` search attribute."""
    execution_status: str
    """Temporal's own view: RUNNING, COMPLETED, FAILED, ..."""
    pending_approvals: int = 0
    awaiting_tool: str | None = None
    started_at: datetime | None = None


class AgentRun:
    """A handle on one agent run (a workflow id)."""

    def __init__(self, client: Client, run_id: str) -> None:
        self.client = client
        self.run_id = run_id
        self.handle: WorkflowHandle[AgentWorkflow, AgentResult] = client.get_workflow_handle_for(
            AgentWorkflow.run, run_id
        )

    @property
    def ui_url(self) -> str:
        """The run's page in the Temporal UI."""
        return ui_url(self.client.namespace, self.run_id)

    async def result(self) -> AgentResult:
        """Wait for the run to end and return how it ended (follows continue-as-new)."""
        return await self.handle.result()

    async def status(self) -> RunSnapshot:
        """What the run is doing now (a query; needs a worker, also for ended runs)."""
        return await self.handle.query(AgentWorkflow.status)

    async def timeline(self) -> list[ToolCallRecord]:
        """Every tool call of the run so far."""
        return await self.handle.query(AgentWorkflow.timeline)

    async def conversation(self) -> list[Message]:
        """The conversation so far."""
        return await self.handle.query(AgentWorkflow.conversation)

    async def events(self) -> list[RunEvent]:
        """The run's event log."""
        return await self.handle.query(AgentWorkflow.events)

    async def child_runs(self) -> list[AgentRun]:
        """Sub-agent runs this run started, in the order it started them."""
        return [
            AgentRun(self.client, record.child_run_id)
            for record in await self.timeline()
            if record.child_run_id
        ]

    async def pending_approvals(self) -> list[tuple[str, PendingApproval]]:
        """Approvals this run and its running sub-agents wait for, as (run id, approval)."""
        snapshot = await self.status()
        mine = [(self.run_id, approval) for approval in snapshot.pending_approvals]
        return mine + await self.subagent_approvals()

    async def subagent_approvals(
        self, timeline: list[ToolCallRecord] | None = None
    ) -> list[tuple[str, PendingApproval]]:
        """Approvals that this run's running sub-agents (and theirs) wait for.

        Args:
            timeline: The run's timeline when the caller already has it (saves a query).
        """
        found: list[tuple[str, PendingApproval]] = []
        for record in timeline if timeline is not None else await self.timeline():
            if record.child_run_id and record.status == "running":
                found += await AgentRun(self.client, record.child_run_id).pending_approvals()
        return found

    async def decide(
        self,
        call_id: str,
        *,
        approve: bool,
        decider: str = "anonymous",
        reason: str | None = None,
        arguments_hash: str | None = None,
    ) -> str:
        """Approve or deny a pending call. Raises if the run's validator rejects the decision.

        A call pending in a sub-agent of this run may be decided through this run: the
        decision goes to the sub-agent run that waits for it.
        """
        target = self
        mine = {a.call_id for a in (await self.status()).pending_approvals}
        if call_id not in mine:
            for run_id, approval in await self.subagent_approvals():
                if approval.call_id == call_id:
                    target = AgentRun(self.client, run_id)
                    break
        decision = ApprovalDecision(
            call_id=call_id,
            approve=approve,
            decider=decider,
            reason=reason,
            arguments_hash=arguments_hash,
        )
        return await target.handle.execute_update(AgentWorkflow.decide, decision)

    async def approve(self, call_id: str, *, decider: str = "anonymous", **kw: str | None) -> str:
        """Approve a pending call (see `decide`)."""
        return await self.decide(call_id, approve=True, decider=decider, **kw)

    async def deny(self, call_id: str, *, decider: str = "anonymous", **kw: str | None) -> str:
        """Deny a pending call (see `decide`)."""
        return await self.decide(call_id, approve=False, decider=decider, **kw)

    async def steer(self, instruction: str) -> None:
        """Give the model a new instruction before its next turn."""
        await self.handle.signal(AgentWorkflow.steer, instruction)

    async def cancel(self, reason: str | None = None) -> None:
        """End the run cleanly, cancelling running tools."""
        await self.handle.signal(AgentWorkflow.cancel, reason)


class DurableTools:
    """Entry point: start runs and find them.

    Args:
        client: A client made with `durable_tools.connect` (pydantic data converter).
        task_queue: Where runs are started; default `DURABLE_TOOLS_TASK_QUEUE`.
    """

    def __init__(self, client: Client, task_queue: str | None = None) -> None:
        self.client = client
        self.task_queue = task_queue or task_queue_from_env()

    @classmethod
    async def connect(
        cls,
        address: str | None = None,
        namespace: str | None = None,
        task_queue: str | None = None,
    ) -> DurableTools:
        """Connect with `TEMPORAL_ADDRESS` / `TEMPORAL_NAMESPACE` defaults."""
        client = await connect(address, resolve_namespace(namespace))
        return cls(client, task_queue)

    async def start(
        self,
        prompt: str,
        *,
        model: str | None = None,
        config: AgentConfig | None = None,
        run_id: str | None = None,
        identity: Identity | None = None,
        granted_scopes: Sequence[str] = (),
    ) -> AgentRun:
        """Start a run and return its handle without waiting.

        Args:
            prompt: The user's request.
            model: Shortcut for `AgentConfig(model=...)` when no config is given.
            config: The agent's configuration.
            run_id: The workflow id; a fresh `run-<uuid>` by default.
            identity: Tenant, user and session the run acts for.
            granted_scopes: Scopes the run holds; tools needing others are invisible.
        """
        if config is None:
            if model is None:
                raise ValueError("give either model= or config=")
            config = AgentConfig(model=model)
        run_id = run_id or f"run-{uuid.uuid4().hex[:12]}"
        await self.client.start_workflow(
            AgentWorkflow.run,
            AgentInput(
                prompt=prompt,
                config=config,
                identity=identity or Identity(),
                granted_scopes=list(granted_scopes),
            ),
            id=run_id,
            task_queue=self.task_queue,
            static_summary=f"{config.name}: {prompt[:120]}",
            search_attributes=TypedSearchAttributes(
                [
                    SearchAttributePair(sa.AGENT_NAME, config.name),
                    SearchAttributePair(sa.AGENT_STATUS, RunStatus.RUNNING.value),
                ]
            ),
        )
        return self.run(run_id)

    def run(self, run_id: str) -> AgentRun:
        """A handle on an existing run."""
        return AgentRun(self.client, run_id)

    async def runs(self, status: str | None = None, limit: int = 50) -> list[RunSummary]:
        """Recent runs, newest first, optionally only those with an `AgentStatus`."""
        query = "WorkflowType = 'AgentWorkflow'"
        if status:
            query += f" AND AgentStatus = '{_quote(status)}'"
        return await self._list(query, limit)

    async def pending(self, limit: int = 200) -> list[RunSummary]:
        """Every run waiting on a person (approval or authorization)."""
        statuses = ", ".join(f"'{s}'" for s in _WAITING)
        query = (
            f"WorkflowType = 'AgentWorkflow' AND ExecutionStatus = 'Running' "
            f"AND AgentStatus IN ({statuses})"
        )
        return await self._list(query, limit)

    async def _list(self, query: str, limit: int) -> list[RunSummary]:
        summaries: list[RunSummary] = []
        async for execution in self.client.list_workflows(query, limit=limit):
            attrs = execution.typed_search_attributes
            status = execution.status or WorkflowExecutionStatus.RUNNING
            summaries.append(
                RunSummary(
                    run_id=execution.id,
                    agent=attrs.get(sa.AGENT_NAME),
                    status=attrs.get(sa.AGENT_STATUS),
                    execution_status=status.name,
                    pending_approvals=attrs.get(sa.PENDING_APPROVALS) or 0,
                    awaiting_tool=attrs.get(sa.AWAITING_TOOL) or None,
                    started_at=execution.start_time,
                )
            )
        return summaries


def _quote(value: str) -> str:
    # Visibility queries take single-quoted strings; refuse quotes instead of escaping them.
    if "'" in value or "\\" in value:
        raise ValueError(f"invalid status {value!r}")
    return value
