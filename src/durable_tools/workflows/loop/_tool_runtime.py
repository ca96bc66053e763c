"""The tool runtime on its own: one tool call through the whole pipeline, from any workflow.

`ToolRuntime` is what an agent run does with a tool call, without the model: a plain
deterministic workflow (an order pipeline with one step a person approves) or another
framework's agent loop (Pydantic AI's `TemporalAgent`, `durable_tools.integrations`)
calls `await tools.call("refund_order", {...})` and the call is validated, counted
against its budget, gated (policy, a person's approval, OAuth authorization), executed
as the tool's activity (its retry policy and idempotency key), recorded and scrubbed, by
the call pipeline of the agent loop itself (`calls._pipeline.run_single_call`).

The runtime holds a `RunState` like an embedded `AgentLoop` and registers the same
handler table on the host under a prefix, so `AgentRun(client, host_id, prefix=...)`,
the CLI's `--prefix`, grants, policies, events, search attributes and the UI's current
details serve it as they serve an agent run.

Everything here is called from inside a workflow; it is deterministic.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from temporalio.exceptions import ApplicationError

from durable_tools.messages import ToolCall
from durable_tools.protocol._limits import clip, short_call_id
from durable_tools.protocol._records import RunEvent, ToolCallRecord
from durable_tools.protocol._run_io import AgentInput, RunSnapshot
from durable_tools.protocol._types import AgentConfig
from durable_tools.tools import InvalidArguments
from durable_tools.tools._context import Identity
from durable_tools.tools._model_description import model_description
from durable_tools.tools._spec import ToolSpec
from durable_tools.workflows.calls._pipeline import run_single_call
from durable_tools.workflows.calls._record import open_record
from durable_tools.workflows.catalog._run_catalog import catalog_summary, load_catalog
from durable_tools.workflows.gates._decisions import forget_decision
from durable_tools.workflows.loop._handlers import register_run_handlers
from durable_tools.workflows.loop._runner import snapshot
from durable_tools.workflows.observe._visibility import publish
from durable_tools.workflows.run._carry import CARRY_LIMIT, start_state
from durable_tools.workflows.run._replies import invalid_reply
from durable_tools.workflows.run._state import EndRun

__all__ = ["NO_MODEL", "ToolReply", "ToolRuntime"]

NO_MODEL = "none:tool-runtime"
"""The `AgentConfig.model` of a runtime built without a config: no model is ever called."""

_DEFAULT_PREFIX = "tools_"


@dataclass(frozen=True)
class ToolReply:
    """How one call ended: what a model reads about it, and its status."""

    call_id: str
    """The call's id (the one given, shortened past 256 characters, or `call-<n>`)."""
    tool: str
    """The tool called."""
    content: str
    """What the model reads: the tool's result, or why it did not run (denied by whom,
    invalid arguments, unauthorized, over budget, cancelled)."""
    status: str
    """The call's timeline status: `completed`, `failed`, `denied`, `invalid`,
    `cancelled`, `skipped`, `outcome_unknown`, ..."""
    is_error: bool
    """True when the tool did not give a result (the model should read it as an error)."""

    @property
    def ok(self) -> bool:
        """The tool ran and gave a result."""
        return self.status == "completed" and not self.is_error


class ToolRuntime:
    """durable-tools' tool runtime inside a workflow of your own, without an agent loop.

    Build it in the host's `@workflow.init` (its handlers must exist before the first
    decision reaches the host), then `await tools.call(name, arguments)` from the run
    method. The first call loads the tool catalog through the catalog activity (recorded
    in history, like an agent run's); each call then takes the agent loop's route:
    validate, budget, approval gate, authorization, the tool's activity, record.

    The host's worker needs durable-tools' plugin (`build_worker(..., workflows=[Host])`).
    The runtime never continues-as-new (the host owns its history); it keeps at most
    `CARRY_LIMIT` timeline entries and `config.events_kept` events.

    Args:
        config: The tools offered (`tools`), the approval policy, `on_invalid_call`,
            `events_kept`, the name shown as `AgentName`; `model` is never called.
            Default: every tool of the worker, the default policy, named "tools".
        identity: On whose behalf the calls are made (tools' scopes, grants, OAuth).
        granted_scopes: Scopes the identity holds, for tools that require some.
        prefix: Put before each handler name registered on the host (as
            `AgentLoop.register_handlers`): `AgentRun(client, host_id, prefix=prefix)`
            and `durable-tools approve HOST CALL --prefix PREFIX` reach the runtime.

    Raises:
        ValueError: the prefix is not valid, or a handler name it makes is taken.
    """

    def __init__(
        self,
        config: AgentConfig | None = None,
        *,
        identity: Identity | None = None,
        granted_scopes: Sequence[str] = (),
        prefix: str = _DEFAULT_PREFIX,
    ) -> None:
        self._state = start_state(
            AgentInput(
                prompt="",
                config=config or AgentConfig(name="tools", model=NO_MODEL),
                identity=identity or Identity(),
                granted_scopes=list(granted_scopes),
            )
        )
        register_run_handlers(self._state, prefix)
        self._loading: asyncio.Task[None] | None = None
        self._numbered = 0

    @property
    def prefix(self) -> str:
        """The prefix of the runtime's handlers on the host."""
        return self._state.handler_prefix

    async def tools(self) -> list[ToolSpec]:
        """The tools this runtime offers (the catalog, loaded at the first need)."""
        await self._ready()
        return list(self._state.catalog.specs)

    @staticmethod
    def description(spec: ToolSpec) -> str:
        """What a model should read of `spec`: its description, then its safety notes and
        examples, as durable-tools' own loop sends it (for a framework's tool definition)."""
        return model_description(spec)

    async def call(
        self,
        tool: str,
        arguments: Mapping[str, Any] | str | None = None,
        *,
        call_id: str | None = None,
    ) -> ToolReply:
        """Run one tool call through the whole pipeline and say how it ended.

        A call that needs a person's approval (or an OAuth authorization) waits here,
        durably, until it is decided; the host shows it as an agent run does
        (`AgentStatus`, `PendingApprovals`, the UI's details, the `<prefix>status` query).
        A denial, invalid arguments or a failed tool are not exceptions: the reply says
        so (`ok` is False, `content` says why), as the model of an agent reads it.

        Args:
            tool: The tool's name (or an alias of it).
            arguments: The tool's arguments (JSON-encodable), or their JSON text as a
                model wrote it (malformed text is answered like a model's).
            call_id: The call's id, which approvals name; default `call-<n>`, `n`
                counting this runtime's calls without an id. An id used before gets a new
                idempotency key, and its approval must name its arguments hash.

        Raises:
            ApplicationError: the policy ends the run on this call (`on_deny="end_run"`,
                `on_timeout="fail"`, `on_invalid_call="fail"`); non-retryable, so the
                host fails unless it catches it.
        """
        self._numbered += 1
        given = call_id if call_id else f"call-{self._numbered}"
        await self._ready()
        state = self._state
        if isinstance(arguments, str):
            text = arguments
        else:
            try:
                text = json.dumps(dict(arguments or {}), allow_nan=False, separators=(",", ":"))
            except (TypeError, ValueError) as error:  # NaN, a set, an object: never run it
                call = ToolCall(id=short_call_id(given), name=tool)
                return self._unencodable(call, str(error))
        call = ToolCall(id=short_call_id(given), name=tool, arguments=text)
        state.tool_calls += 1
        try:
            message = await run_single_call(state, call, {s.name: s for s in state.catalog.specs})
        except EndRun as end:
            raise ApplicationError(
                end.reason, type=f"ToolRuntime:{end.status.value}", non_retryable=True
            ) from None
        record = state.calls.records.get(call.id)
        reply = ToolReply(
            call_id=call.id,
            tool=record.tool if record is not None else tool,
            content=message.content or "",
            status=record.status if record is not None else "invalid",
            is_error=bool(message.is_error),
        )
        self._forget(call.id, record)
        return reply

    def _unencodable(self, call: ToolCall, why: str) -> ToolReply:
        """Refuse arguments JSON cannot hold, recorded like any invalid call."""
        state = self._state
        record = open_record(state, call)
        error = InvalidArguments(
            "the arguments cannot be encoded as JSON",
            errors=[f"$: {clip(why, 200)}; send JSON values (finite numbers, lists, objects)"],
        )
        record.status = "invalid"
        record.error_kind = error.kind.value
        record.result = error.message
        state.event("tool.invalid_args", call, detail=error.message)
        message = invalid_reply(call.id, call.name, error)
        self._forget(call.id, record)
        return ToolReply(call.id, call.name[:64], message.content or "", "invalid", True)

    def status(self) -> RunSnapshot:
        """What the runtime is doing now (also the `<prefix>status` query)."""
        return snapshot(self._state)

    def events(self) -> list[RunEvent]:
        """The runtime's event log (also the `<prefix>events` query)."""
        return self._state.events

    def timeline(self) -> list[ToolCallRecord]:
        """The calls made so far, the latest `CARRY_LIMIT` (also `<prefix>timeline`)."""
        return self._state.timeline

    async def _ready(self) -> None:
        """Load the catalog once; calls made at the same time wait for the same load."""
        if self._loading is None:
            self._loading = asyncio.create_task(self._load())
        await asyncio.shield(self._loading)

    async def _load(self) -> None:
        state = self._state
        try:
            await load_catalog(state)
        except EndRun as end:  # a catalog too large even packed
            raise ApplicationError(end.reason, type="CatalogTooLarge", non_retryable=True) from None
        state.event("run.started", detail=catalog_summary(state))
        publish(state)

    def _forget(self, call_id: str, record: ToolCallRecord | None) -> None:
        """Drop what only the finished call needed, so a long-lived host stays bounded."""
        state = self._state
        if call_id not in state.calls.running:  # not reused by a call that runs now
            if record is not None and state.calls.records.get(call_id) is record:
                del state.calls.records[call_id]
            forget_decision(state.gates, call_id)
            state.calls.keys.pop(call_id, None)
        del state.timeline[:-CARRY_LIMIT]
