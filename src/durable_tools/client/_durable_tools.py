"""`DurableTools`: the entry point that starts runs (now, per message, on a calendar) and finds
them; `DurableTools.run` hands out the `AgentRun` handle on one.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel
from temporalio.client import Client, ScheduleHandle, WorkflowExecution, WorkflowExecutionStatus
from temporalio.converter import PayloadCodec

from durable_tools import search_attributes as sa
from durable_tools.client.runs._agent_run import AgentRun
from durable_tools.client.sessions._messages import (
    SentMessage,
    send_with_start,
    start_operation,
)
from durable_tools.client.start._options import (
    start_attributes,
    start_config,
    start_summary,
    start_versioning,
)
from durable_tools.client.start._schedules import (
    CRON_MEMO,
    DEFAULT_CATCHUP_WINDOW,
    Overlap,
    ScheduleSummary,
    check_schedule_id,
    list_schedules,
    new_schedule,
)
from durable_tools.connection import ConnectionOptions, connect
from durable_tools.messages import ModelSettings
from durable_tools.protocol._run_io import INPUT_REVISION
from durable_tools.protocol._types import WAITING_STATUSES, status_in
from durable_tools.tools._context import Identity
from durable_tools.worker import task_queue_from_env
from durable_tools.workflows import (
    AgentConfig,
    AgentInput,
    AgentWorkflow,
    SessionConfig,
    SessionReply,
)

__all__ = ["DurableTools", "RunSummary"]


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

    @classmethod
    def of(cls, execution: WorkflowExecution) -> RunSummary:
        """The summary of one run as the visibility store lists it."""
        attrs = execution.typed_search_attributes
        status = execution.status or WorkflowExecutionStatus.RUNNING
        return cls(
            run_id=execution.id,
            agent=attrs.get(sa.AGENT_NAME),
            status=attrs.get(sa.AGENT_STATUS),
            execution_status=status.name,
            pending_approvals=attrs.get(sa.PENDING_APPROVALS) or 0,
            awaiting_tool=attrs.get(sa.AWAITING_TOOL) or None,
            started_at=execution.start_time,
        )


_ID_UNSAFE = re.compile(r"[^a-z0-9-]+")


def _default_run_id(agent: str) -> str:
    """A new run's workflow id: the agent's name (lowercase ASCII letters, digits and
    dashes, at most 40) and 12 random hex digits."""
    name = _ID_UNSAFE.sub("-", agent.lower()).strip("-")[:40].strip("-") or "run"
    return f"{name}-{uuid.uuid4().hex[:12]}"


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
        *,
        options: ConnectionOptions | None = None,
        payload_codec: PayloadCodec | None = None,
    ) -> DurableTools:
        """Connect as the `temporal` CLI would (profile, `TEMPORAL_*` env, then arguments).

        Args:
            address: host:port of the frontend; wins over the env and the profile.
            namespace: Wins over the env and the profile.
            task_queue: Where runs are started; default `DURABLE_TOOLS_TASK_QUEUE`.
            options: Further settings (profile, API key, TLS files); see `connect`.
            payload_codec: The codec the workers use too (e.g. encryption).
        """
        client = await connect(address, namespace, options=options, payload_codec=payload_codec)
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
        model_settings: ModelSettings | None = None,
        output_type: Any = None,
    ) -> AgentRun:
        """Start a run and return its handle without waiting.

        Args:
            prompt: The user's request.
            model: Shortcut for `AgentConfig(model=...)` when no config is given.
            config: The agent's configuration.
            run_id: The workflow id; by default the agent's name and a fresh suffix
                (`support-3f9c2a1b7d4e`), so the UI's list says which agent each run is.
            identity: Tenant, user and session the run acts for.
            granted_scopes: Scopes the run holds; tools needing others are invisible.
            model_settings: Model settings for this run: the fields it sets replace the
                config's `model_settings` (its `extra` is merged key by key).
            output_type: The type of the final answer (see `AgentConfig.output_type`);
                replaces the config's. `(await run.result()).output` is then an instance.
        """
        run_input, options = await self._start_args(
            prompt, model, config, identity, granted_scopes, model_settings, output_type
        )
        run_id = run_id or _default_run_id(run_input.config.name)
        await self.client.start_workflow(
            AgentWorkflow.run, run_input, id=run_id, task_queue=self.task_queue, **options
        )
        schema = run_input.config.output_type
        return self.run(run_id, output_type=schema.python_type if schema else None)

    async def _start_args(
        self,
        prompt: str,
        model: str | None,
        config: AgentConfig | None,
        identity: Identity | None,
        granted_scopes: Sequence[str],
        model_settings: ModelSettings | None,
        output_type: Any,
    ) -> tuple[AgentInput, dict[str, Any]]:
        """A run's input, and the start options besides its id and task queue."""
        config = start_config(
            self.client,
            model=model,
            config=config,
            model_settings=model_settings,
            output_type=output_type,
        )
        run_input = AgentInput(
            prompt=prompt,
            config=config,
            identity=identity or Identity(),
            granted_scopes=list(granted_scopes),
            revision=INPUT_REVISION,
        )
        options = {
            "static_summary": start_summary(config, prompt),
            "search_attributes": await start_attributes(self.client, config),
            "versioning_override": start_versioning(config),
        }
        return run_input, options

    async def send(
        self,
        session_id: str,
        text: str,
        *,
        model: str | None = None,
        config: AgentConfig | None = None,
        message_id: str | None = None,
        identity: Identity | None = None,
        granted_scopes: Sequence[str] = (),
        model_settings: ModelSettings | None = None,
    ) -> SessionReply:
        """Send a message to the session `session_id`, starting it first if it is not
        running, and wait for the answer: one call per message for a chat front end.

        `start_send` returns once the run took the message instead (see
        docs/sessions.md). The start arguments matter only when the call starts the
        session; a session that ended is not started again under its id.

        Args:
            session_id: The session's workflow id.
            text: The user's message.
            model: As for `start`.
            config: As for `start`; `config.session` defaults to `SessionConfig()`.
            identity: As for `start`.
            granted_scopes: As for `start`.
            model_settings: As for `start`.
            message_id: As for `AgentRun.start_send`.

        Raises:
            SessionRefused: the run refused the message, or the session has ended.
            WorkflowUpdateFailedError: the run failed while answering it (its cause, an
                `ApplicationError` of type `SessionFailed`, says why: the catalog of a
                session this call started, say, naming tools the worker does not have).
        """
        sent = await self.start_send(
            session_id,
            text,
            model=model,
            config=config,
            message_id=message_id,
            identity=identity,
            granted_scopes=granted_scopes,
            model_settings=model_settings,
        )
        return await sent.result()

    async def start_send(
        self,
        session_id: str,
        text: str,
        *,
        model: str | None = None,
        config: AgentConfig | None = None,
        message_id: str | None = None,
        identity: Identity | None = None,
        granted_scopes: Sequence[str] = (),
        model_settings: ModelSettings | None = None,
    ) -> SentMessage:
        """`send`, returning once the run took the message (update-with-start)."""
        run_input, options = await self._start_args(
            "", model, config, identity, granted_scopes, model_settings, None
        )
        if run_input.config.session is None:  # a session, whatever the config says
            session = run_input.config.model_copy(update={"session": SessionConfig()})
            run_input = run_input.model_copy(update={"config": session})
        start = start_operation(
            AgentWorkflow.run, run_input, id=session_id, task_queue=self.task_queue, **options
        )
        return await send_with_start(self.client, start, session_id, text, message_id)

    async def create_schedule(
        self,
        schedule_id: str,
        prompt: str,
        *,
        cron: str | Sequence[str],
        model: str | None = None,
        config: AgentConfig | None = None,
        overlap: Overlap = "skip",
        catchup_window: timedelta = DEFAULT_CATCHUP_WINDOW,
        paused: bool = False,
        note: str | None = None,
        identity: Identity | None = None,
        granted_scopes: Sequence[str] = (),
        model_settings: ModelSettings | None = None,
        output_type: Any = None,
    ) -> ScheduleHandle:
        """Start a run at each of `cron`'s times, on a Temporal Schedule (docs/schedules.md).

        Each run starts as `start` would start it (the same config resolution and search
        attributes) with the id `<schedule_id>-<scheduled time>`.

        Args:
            schedule_id: The schedule's name; prefixes its runs' ids.
            prompt: The request each run gets.
            cron: One cron expression (`"0 9 * * MON-FRI"`, UTC) or several.
            model: Shortcut for `AgentConfig(model=...)` when no config is given.
            config: The agent's configuration.
            overlap: What happens when a run is due while the previous one still runs
                (waits on an approval, say): `skip` by default.
            catchup_window: How late a run missed while the server was down may still start.
            paused: Create it paused (`schedule(id).unpause()` starts it).
            note: Why, shown with the schedule.
            identity: Tenant, user and session the runs act for.
            granted_scopes: Scopes the runs hold.
            model_settings: As for `start`.
            output_type: As for `start`.

        Raises:
            ValueError: a bad id, cron, overlap or catch-up window, or an `auto_upgrade` run.
            temporalio.service.RPCError: the server refused it (a cron it cannot parse).
            temporalio.client.ScheduleAlreadyRunningError: a schedule with this id exists.
        """
        resolved = start_config(
            self.client,
            model=model,
            config=config,
            model_settings=model_settings,
            output_type=output_type,
        )
        expressions = [cron] if isinstance(cron, str) else list(cron)
        schedule = await new_schedule(
            self.client,
            schedule_id,
            prompt,
            config=resolved,
            task_queue=self.task_queue,
            cron=expressions,
            overlap=overlap,
            catchup_window=catchup_window,
            paused=paused,
            note=note,
            identity=identity or Identity(),
            granted_scopes=granted_scopes,
        )
        return await self.client.create_schedule(
            schedule_id, schedule, memo={CRON_MEMO: expressions}
        )

    def schedule(self, schedule_id: str) -> ScheduleHandle:
        """The handle on a schedule: `pause(note=)`, `unpause()`, `trigger()`, `delete()`,
        `describe()` (temporalio's `ScheduleHandle`)."""
        return self.client.get_schedule_handle(check_schedule_id(schedule_id))

    async def schedules(self, limit: int = 100) -> list[ScheduleSummary]:
        """The namespace's schedules, the agent's first (`agent_workflow` tells them apart)."""
        return await list_schedules(self.client, limit)

    def run(self, run_id: str, *, output_type: Any = None, prefix: str = "") -> AgentRun:
        """A handle on an existing run; `output_type` and `prefix` as for `AgentRun`."""
        return AgentRun(self.client, run_id, output_type, prefix=prefix)

    async def runs(self, status: str | None = None, limit: int = 50) -> list[RunSummary]:
        """Recent runs, newest first, optionally only those with an `AgentStatus`."""
        query = "WorkflowType = 'AgentWorkflow'"
        if status:
            query += f" AND AgentStatus = '{_quote(status)}'"
        return await self._list(query, limit)

    async def pending(self, limit: int = 200) -> list[RunSummary]:
        """Every run waiting on someone: a person's approval, authorization or answer to an
        MCP server's question, a client to run a callback tool's call, or a session's
        user for the next message."""
        query = (
            f"WorkflowType = 'AgentWorkflow' AND ExecutionStatus = 'Running' "
            f"AND {status_in(WAITING_STATUSES)}"
        )
        return await self._list(query, limit)

    async def _list(self, query: str, limit: int) -> list[RunSummary]:
        return [
            RunSummary.of(execution)
            async for execution in self.client.list_workflows(query, limit=limit)
        ]


def _quote(value: str) -> str:
    # Visibility queries take single-quoted strings; refuse quotes instead of escaping them.
    if "'" in value or "\\" in value:
        raise ValueError(f"invalid status {value!r}")
    return value
