"""What the inbox shows of one run, read through the client API: a call with its context,
a run with its timeline (the pending list across runs is `_pending`), or, for a run whose
payloads this inbox cannot decrypt, what the server shows in plain (`EncryptedRun`)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar

from temporalio.service import RPCError

from durable_tools import search_attributes as sa
from durable_tools._encrypted import ENCRYPTED_NOTE, PayloadsEncrypted, is_encrypted_payload_error
from durable_tools.client import DurableTools
from durable_tools.messages import Message
from durable_tools.server import ui_url
from durable_tools.tools import ToolRegistry
from durable_tools.tools._spec import ToolSpec
from durable_tools.workflows import PendingApproval, RunEvent, RunSnapshot, ToolCallRecord

from ._explain import acts_for, at_deadline, grant_offer, short_prompt
from ._hosts import run_handle
from ._pending import QUERY_TIMEOUT
from ._run_record import RunRecord, RunRecords

__all__ = [
    "CallView",
    "EncryptedRun",
    "RunView",
    "find_call",
    "load_run",
    "read_record",
    "readable",
    "what_server_shows",
]

_T = TypeVar("_T")
SpecSource = Literal["run", "inbox", "unknown"]


async def readable(query: Awaitable[_T]) -> _T:
    """A run query's answer, within `QUERY_TIMEOUT`.

    Raises:
        PayloadsEncrypted: the run's payloads are encrypted and this inbox has no keys.
    """
    try:
        return await asyncio.wait_for(query, QUERY_TIMEOUT)
    except KeyError as error:
        if is_encrypted_payload_error(error):
            raise PayloadsEncrypted(ENCRYPTED_NOTE) from None
        raise


@dataclass(frozen=True)
class CallView:
    """Everything the call page shows."""

    run_id: str
    """The run the page is of (and the decision is sent to)."""
    waiting_run: str
    """The run that waits: `run_id`, or one of its sub-agents."""
    approval: PendingApproval
    snapshot: RunSnapshot
    """The waiting run's status."""
    record: RunRecord
    recent: list[Message]
    trail: list[RunEvent]
    spec: ToolSpec | None
    spec_source: SpecSource
    """Where `spec` comes from: the run's recorded catalog, the inbox's `--tools`, or nowhere."""
    now: datetime = field(default_factory=lambda: datetime.now(UTC))

    @property
    def acts_for(self) -> str:
        """Whom the run acts for, in words."""
        return acts_for(self.record.identity)

    @property
    def prompt(self) -> tuple[str, bool]:
        """The prompt the run started with (cut), and whether it was cut."""
        return short_prompt(self.record.prompt)

    @property
    def at_deadline(self) -> str:
        """What happens if nobody decides in time."""
        return at_deadline(self.approval, self.snapshot.policy, self.now)

    @property
    def grant_offer(self) -> str | None:
        """What "Approve and stop asking" would allow; None when not offered."""
        return grant_offer(self.approval)


async def read_record(records: RunRecords, run_id: str, continued: int) -> RunRecord:
    """Run `run_id`'s record, or an empty one when its history cannot be read in time."""
    # The page is still worth showing without it (history unreadable): say "not known".
    try:
        return await asyncio.wait_for(records.record(run_id, continued), QUERY_TIMEOUT)
    except (RPCError, KeyError, TimeoutError):
        return RunRecord()


async def find_call(
    tools: DurableTools,
    run_id: str,
    call_id: str,
    registry: ToolRegistry | None,
    records: RunRecords,
) -> CallView | None:
    """The pending approval of `call_id` in run `run_id` with its context, or None.

    Raises:
        PayloadsEncrypted: the run's payloads are encrypted and this inbox has no keys.
    """
    run = await run_handle(tools, run_id)
    snapshot = await readable(run.status())
    approval = next((a for a in snapshot.pending_approvals if a.call_id == call_id), None)
    waiting = run
    if approval is None and snapshot.subagent_approvals:
        # A sub-agent's call, shown on this run's page: its context is the sub-agent's,
        # the decision goes through this run (`decide_request` finds the sub-agent).
        found = await readable(run.find_approval(call_id))
        if found is None:
            return None
        waiting, approval = found
        snapshot = await readable(waiting.status())
    if approval is None:
        return None
    conversation, events, record = await asyncio.gather(
        readable(waiting.conversation()),
        readable(waiting.events()),
        read_record(records, waiting.run_id, snapshot.continued),
    )
    if record.prompt is None:  # the history unread: the conversation may still hold it
        first = next((m.content for m in conversation if m.role == "user"), None)
        record = dataclasses.replace(record, prompt=first)
    spec = record.spec(approval.tool)
    source: SpecSource = "run" if spec is not None else "unknown"
    if spec is None and registry is not None and approval.tool in registry.names():
        spec, source = registry.get(approval.tool).spec, "inbox"
    return CallView(
        run_id=run_id,
        waiting_run=waiting.run_id,
        approval=approval,
        snapshot=snapshot,
        record=record,
        recent=conversation[-8:],
        trail=[e for e in events if e.call_id == call_id and not e.subagent_run],
        spec=spec,
        spec_source=source,
    )


@dataclass(frozen=True)
class EncryptedRun:
    """What the server shows in plain of a run whose payloads are encrypted."""

    run_id: str
    note: str
    execution: str
    started_at: datetime | None
    task_queue: str
    attributes: dict[str, Any]
    ui_url: str


async def what_server_shows(tools: DurableTools, run_id: str, ui_base: str | None) -> EncryptedRun:
    """The plain part of an encrypted run: status, search attributes (agent, status,
    waiting tool, pending count), start time and task queue.

    Raises:
        RPCError: the run could not be described.
    """
    description = await asyncio.wait_for(tools.run(run_id).handle.describe(), QUERY_TIMEOUT)
    found = {key.name: description.typed_search_attributes.get(key) for key in sa.SEARCH_ATTRIBUTES}
    return EncryptedRun(
        run_id=run_id,
        note=ENCRYPTED_NOTE,
        execution=description.status.name if description.status is not None else "UNKNOWN",
        started_at=description.start_time,
        task_queue=description.task_queue,
        attributes={name: value for name, value in found.items() if value not in (None, "")},
        ui_url=ui_url(
            tools.client.namespace,
            run_id,
            base=ui_base,
            address=tools.client.service_client.config.target_host,
        ),
    )


@dataclass(frozen=True)
class RunView:
    """Everything the run page shows."""

    run_id: str
    snapshot: RunSnapshot
    timeline: list[ToolCallRecord]
    events: list[RunEvent]
    ui_url: str


async def load_run(tools: DurableTools, run_id: str, ui_base: str | None) -> RunView:
    """A run's status, timeline with deciders, and events (a host's: its runtime's)."""
    run = await run_handle(tools, run_id)
    snapshot, timeline, events = await asyncio.gather(
        readable(run.status()), readable(run.timeline()), readable(run.events())
    )
    return RunView(
        run_id=run_id,
        snapshot=snapshot,
        timeline=await run.decided_timeline(timeline),
        events=events,
        ui_url=ui_url(
            tools.client.namespace,
            run_id,
            base=ui_base,
            address=tools.client.service_client.config.target_host,
        ),
    )
