"""The state of one agent run: one part per role, and what the loop itself keeps.

Each role's part is changed only by that role's package, and a function that needs one
part takes that part: `catalog` (`CatalogState`: the tools, what is advertised, the
search) by `catalog/`, `calls` (`RunCalls`: ids used, keys, running tasks, records,
budgets) by `calls/`, `gates` (`GateState`: the live policy, standing grants, the waits
and their answers) by `gates/`, `model` (`ModelUse`: tokens, the compacted context, tool
definitions) by `loop/`. The parts are data only and live here in `run/` so that every
layer can read them; `bench.state_use` counts the assignments made outside the owner.

What outlives a history (conversation, timeline, counters, pending steering, ...) is
what continue-as-new carries: `_carry.carry_state` writes the wire shape `CarriedState`
(unchanged by the split into parts) and `_carry.start_state` reads it back. Pending
decisions and running tools are never carried: a run continues-as-new only between
turns, when none are open.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from temporalio import workflow

from durable_tools.messages import Message, ToolCall
from durable_tools.protocol._event_names import EventName
from durable_tools.protocol._records import RunEvent, ToolCallRecord
from durable_tools.protocol._run_io import AgentInput
from durable_tools.protocol._types import AgentConfig, RunStatus, Transport
from durable_tools.tools._context import Identity
from durable_tools.tools._results import ArtifactRef
from durable_tools.workflows.run._catalog_state import CatalogState
from durable_tools.workflows.run._model_use import ModelUse
from durable_tools.workflows.run._run_calls import RunCalls
from durable_tools.workflows.run._session import Session
from durable_tools.workflows.run._wait_maps import GateState

__all__ = ["CallSkipped", "EndRun", "RunState"]

_NOBODY = Identity()


class EndRun(Exception):
    """Raised anywhere in the loop to end the run with a status (limit, policy, cancel)."""

    def __init__(self, status: RunStatus, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class CallSkipped(Exception):
    """Raised inside a call's route when a steer asked to skip the turn's remaining calls
    (a call waiting for approval stops waiting); the pipeline answers it as skipped."""


@dataclass
class RunState:
    """Everything one run knows. Carried fields first, then what lives in one history."""

    input: AgentInput
    config: AgentConfig
    conversation: list[Message]
    """Messages from index `offset` of the whole conversation on."""

    # One part per role, each changed only by its role's package (`bench.state_use`).
    catalog: CatalogState = field(default_factory=CatalogState)
    tool_selectors: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    """The worker's tool selectors by name (`workflows.catalog._selection`), handed in by
    the worker's interceptor; the run uses the one its config names."""
    """The tools this run may use and what it advertises; changed only by
    `workflows/catalog/`."""
    calls: RunCalls = field(default_factory=RunCalls)
    """The tool calls' own state (ids used, keys, running tasks, records, budgets);
    changed only by `workflows/calls/`."""
    gates: GateState = field(default_factory=GateState)
    """The live policy and standing grants, the calls waiting at a gate and their answers;
    changed only by `workflows/gates/`."""
    model: ModelUse = field(default_factory=ModelUse)
    """What the model calls used and were sent (tokens, the compacted context, the tool
    definitions); changed only by `workflows/loop/`."""

    # The run's own: the loop's turns, answer and status. Carried first.
    turn: int = 0
    tool_calls: int = 0
    timeline: list[ToolCallRecord] = field(default_factory=list)
    events: list[RunEvent] = field(default_factory=list)
    """The last `config.events_kept` events; `events_total` counts all of them."""
    events_total: int = 0
    """Events emitted by the whole chain: the next event's `seq`."""
    steer: list[str] = field(default_factory=list)
    """Steering instructions waiting for the next model turn."""
    continued: int = 0
    offset: int = 0
    """Messages before this index live only in the conversation snapshot."""
    snapshot: ArtifactRef | None = None
    snapshot_length: int = 0
    output_repairs: int = 0
    """Final answers that broke the output schema so far (see `_final_output`)."""
    session: Session | None = None
    """With `AgentConfig.session`: the session's messages and wait (see loop `_session`)."""

    # Not carried: rebuilt, or empty between turns.
    turn_base: int = 0
    """`turn` when the message being answered arrived: a session's limits count per message
    (0 for a run that is no session, whose limits count the whole run)."""
    tool_calls_base: int = 0
    """`tool_calls` when the message being answered arrived (as `turn_base`)."""
    timeline_carried_in: int = 0
    """Timeline entries this run started with (carried from the run before it)."""
    events_carried_in: int = 0
    """`events_total` when this run started: events after it are this run's own."""
    depth: int = 0
    max_depth: int = 1
    status: RunStatus = RunStatus.RUNNING
    final_answer: str | None = None
    output: Any = None
    """The validated structured final answer (with `AgentConfig.output_type`)."""
    reason: str | None = None
    failing: bool = False
    """An activity or child failed the run and the execution is failing with it: a
    session's message in flight is answered with the error, not with a reply."""
    cancel_reason: str | None = None
    skip_steer: str | None = None
    """The instruction of a steer that asked to skip the current turn's remaining calls;
    cleared when the pending steers are delivered to the model. Never carried: a run
    continues-as-new only between turns, and the next delivery would clear it anyway."""
    notifications: int = 0
    """Notifications started in this history (numbers their delivery ids)."""
    notifying: set[asyncio.Task[None]] = field(default_factory=set)
    """Notifications still being sent; never awaited by the loop."""
    published: tuple[str, int, str] | None = None
    """Search attribute values last upserted, so unchanged ones are not sent again."""
    handler_prefix: str = ""
    """What the run's handler names start with: "" for an agent workflow, the prefix of an
    embedded `AgentLoop`'s `register_handlers`. Parties outside the workflow are told it
    (the OAuth callback signals `handler_prefix + "authorization_completed"`)."""

    def event(
        self,
        name: EventName,
        call: ToolCall | None = None,
        *,
        tool: str | None = None,
        call_id: str | None = None,
        detail: str | None = None,
        transport: Transport | None = None,
        attempt: int | None = None,
        duration_ms: float | None = None,
        error_kind: str | None = None,
        artifacts: list[ArtifactRef] | None = None,
        details: Any = None,
    ) -> None:
        """Append to the run's audit stream, keeping the last `config.events_kept` events.

        Events live in workflow memory (queries read them), never as history events; the
        ones dropped here were readable through `events_since` while they were kept.
        """
        identity = self.input.identity
        self.events.append(
            RunEvent(
                at=workflow.now(),
                event=name,
                call_id=call.id if call else call_id,
                tool=call.name if call else tool,
                detail=detail,
                seq=self.events_total,
                identity=None if identity == _NOBODY else identity,
                transport=transport,
                attempt=attempt,
                duration_ms=duration_ms,
                error_kind=error_kind,
                artifacts=list(artifacts or ()),
                details=details,
            )
        )
        self.events_total += 1
        excess = len(self.events) - self.config.events_kept
        if excess > 0:
            del self.events[:excess]

    def check_cancelled(self) -> None:
        """End the run if a cancel was requested."""
        if self.cancel_reason is not None:
            raise EndRun(RunStatus.CANCELLED, self.cancel_reason)

    def check_call_cancelled(self) -> None:
        """Stop the current call (not the loop) if a cancel was requested."""
        if self.cancel_reason is not None:
            raise asyncio.CancelledError(self.cancel_reason)

    def check_call_skipped(self) -> None:
        """Stop the current call before it runs if a steer asked to skip the rest."""
        if self.skip_steer is not None:
            raise CallSkipped(self.skip_steer)

    def cancel_running(self, reason: str) -> None:
        """Ask every running call's task to stop (activities learn it through heartbeats)."""
        for task in self.calls.running.values():
            if not task.done():
                task.cancel(reason)

    def running_calls(self) -> list[str]:
        """Call ids whose tool is executing now (not waiting, not finished)."""
        return sorted(
            call_id
            for call_id, record in self.calls.records.items()
            if record.status == "running" and call_id in self.calls.running
        )
