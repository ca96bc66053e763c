"""Following a run from the outside: poll its status and timeline, print what changes.

Used by `durable-tools run --wait` and by the demo (which is why it lives outside `cli`).
Queries need a worker; when none answers, the watcher says so once and keeps waiting for
the run's result.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from temporalio.client import WorkflowFailureError, WorkflowQueryFailedError
from temporalio.exceptions import CancelledError as TemporalCancelledError
from temporalio.service import RPCError

from durable_tools._encrypted import (
    ENCRYPTED_NOTE,
    PayloadsEncrypted,
    is_encrypted_payload_error,
)
from durable_tools.client.render._text import (
    render_approval,
    render_authorization,
    render_record,
)
from durable_tools.client.runs._agent_run import AgentRun
from durable_tools.client.runs._progress import ToolProgress
from durable_tools.client.runs._workers import has_workers
from durable_tools.tools._progress import Progress
from durable_tools.workflows import (
    AgentResult,
    PendingApproval,
    RunSnapshot,
    RunStatus,
    ToolCallRecord,
)

__all__ = [
    "ENCRYPTED_NOTE",
    "QUERY_TIMEOUT",
    "ApprovalHandler",
    "Outcome",
    "PayloadsEncrypted",
    "RunWatcher",
    "has_workers",
    "is_encrypted_payload_error",
    "progress_quietly",
    "query_quietly",
    "render_progress",
    "status_quietly",
]

_T = TypeVar("_T")

QUERY_TIMEOUT = 5.0
"""Seconds a status or timeline query may take before the watcher gives up on it."""


@dataclass
class Outcome:
    """How a watched run ended."""

    run_id: str
    status: str
    final_answer: str | None = None
    reason: str | None = None
    turns: int = 0
    tool_calls: int = 0
    timeline: list[ToolCallRecord] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when the run completed."""
        return self.status == RunStatus.COMPLETED.value

    def to_json(self, ui_url: str) -> dict[str, Any]:
        """The machine-readable form `--json` prints."""
        return {
            "run_id": self.run_id,
            "ui_url": ui_url,
            "status": self.status,
            "final_answer": self.final_answer,
            "reason": self.reason,
            "turns": self.turns,
            "tool_calls": self.tool_calls,
            "timeline": [r.model_dump(mode="json") for r in self.timeline],
        }


async def query_quietly(
    run: AgentRun, timeout: float = QUERY_TIMEOUT, *, task_queue: str | None = None
) -> tuple[RunSnapshot, list[ToolCallRecord]] | None:
    """Status and timeline, or None when no worker answers (or the query fails).

    Args:
        run: The run.
        timeout: Seconds each query may take.
        task_queue: The run's task queue: when given and no worker polls it, the queries
            are skipped instead of waiting for their timeout.

    Raises:
        PayloadsEncrypted: the run's payloads are encrypted and this client has no keys.
    """
    snapshot = await status_quietly(run, timeout, task_queue=task_queue)
    if snapshot is None:
        return None
    timeline = await _quietly(run.timeline(), timeout)
    return None if timeline is None else (snapshot, timeline)


async def status_quietly(
    run: AgentRun, timeout: float = QUERY_TIMEOUT, *, task_queue: str | None = None
) -> RunSnapshot | None:
    """The run's status alone, as `query_quietly` asks it (one query instead of two)."""
    if task_queue is not None and not await has_workers(run.client, task_queue):
        return None
    return await _quietly(run.status(), timeout)


async def _quietly(query: Awaitable[_T], timeout: float) -> _T | None:
    try:
        return await asyncio.wait_for(query, timeout)
    except (WorkflowQueryFailedError, RPCError, TimeoutError):
        return None
    except KeyError as error:
        if is_encrypted_payload_error(error):
            raise PayloadsEncrypted(ENCRYPTED_NOTE) from None
        raise


async def progress_quietly(run: AgentRun, timeout: float = QUERY_TIMEOUT) -> list[ToolProgress]:
    """The run's tool progress (from `describe()`), or nothing when the server does not answer."""
    try:
        return await asyncio.wait_for(run.progress(), timeout)
    except (RPCError, TimeoutError):
        return []


def render_progress(progress: Progress) -> str:
    """One line for a progress report: `40% fetching page 2`."""
    parts = []
    if progress.fraction is not None:
        parts.append(f"{progress.fraction:.0%}")
    if progress.message:
        parts.append(progress.message)
    if progress.partial is not None:
        parts.append("(partial result)")
    return " ".join(parts) or "(working)"


ApprovalHandler = Callable[[AgentRun, PendingApproval], Awaitable[None]]


class RunWatcher:
    """Prints a run's progress until it ends.

    Args:
        run: The run to follow.
        out: Where lines go (`print` by default).
        interval: Seconds between polls.
        on_approval: Called once per pending approval (the demo decides there); without it,
            the watcher prints the commands that decide.
        task_queue: Named in the "no worker" hint.
    """

    def __init__(
        self,
        run: AgentRun,
        *,
        out: Callable[[str], None] = print,
        interval: float = 0.5,
        on_approval: ApprovalHandler | None = None,
        task_queue: str | None = None,
    ) -> None:
        self.run = run
        self.out = out
        self.interval = interval
        self.on_approval = on_approval
        self.task_queue = task_queue
        self._status: str | None = None
        self._records: dict[str, str] = {}
        self._approvals: set[str] = set()
        self._authorizations: set[str] = set()
        self._progress: dict[str, int] = {}
        self._warned = False

    async def watch(self) -> Outcome:
        """Follow the run to its end and say how it ended."""
        result = asyncio.ensure_future(self.run.result())
        try:
            while not result.done():
                await self.poll()
                if not result.done():
                    await asyncio.wait({result}, timeout=self.interval)
            polled = await self.poll()
        finally:
            if not result.done():
                result.cancel()
                with contextlib.suppress(BaseException):
                    await result
        timeline = polled[1] if polled else []
        try:
            ended: AgentResult = result.result()
        except WorkflowFailureError as failure:
            cancelled = isinstance(failure.cause, TemporalCancelledError)
            status = RunStatus.CANCELLED if cancelled else RunStatus.FAILED
            reason = _failure_message(failure)
            snapshot = polled[0] if polled else None
            outcome = Outcome(
                self.run.run_id,
                status.value,
                reason=reason,
                turns=snapshot.turn if snapshot else 0,
                tool_calls=snapshot.tool_calls if snapshot else 0,
                timeline=timeline,
            )
        else:
            outcome = Outcome(
                self.run.run_id,
                ended.status.value,
                final_answer=ended.final_answer,
                reason=ended.reason,
                turns=ended.turns,
                tool_calls=ended.tool_calls,
                timeline=timeline,
            )
        if self._status != outcome.status:
            self.out(f"status: {outcome.status}")
        return outcome

    async def poll(self) -> tuple[RunSnapshot, list[ToolCallRecord]] | None:
        """One look at the run: print what changed since the last one."""
        polled = await query_quietly(self.run, task_queue=self.task_queue)
        if polled is None:
            if not self._warned:
                where = f" on task queue {self.task_queue}" if self.task_queue else ""
                self.out(f"(no worker answers for this run yet{where}; waiting)")
                self._warned = True
            return None
        snapshot, timeline = polled
        for record in timeline:
            if self._records.get(record.call_id) != record.status:
                self._records[record.call_id] = record.status
                self.out("  " + render_record(record))
        if any(record.status == "running" for record in timeline):
            await self._print_progress()
        status = snapshot.status.value
        if status != self._status:
            self.out(f"status: {status}")
            self._status = status
        for authorization in snapshot.pending_authorizations:
            if authorization.call_id not in self._authorizations:
                self._authorizations.add(authorization.call_id)
                self.out(_indent(render_authorization(authorization)))
        for approval in snapshot.pending_approvals:
            if approval.call_id in self._approvals:
                continue
            self._approvals.add(approval.call_id)
            if self.on_approval is not None:
                await self.on_approval(self.run, approval)
            else:
                self.out(_indent(render_approval(self.run.run_id, approval)))
        return polled

    async def _print_progress(self) -> None:
        # Every report not printed yet, from the bounded stream the heartbeat carries:
        # heartbeats are throttled, so a poll may find several new ones at once.
        for item in await progress_quietly(self.run):
            seen = self._progress.get(item.call_id, 0)
            for report in [*item.recent, item.progress]:
                if report.seq > seen:
                    self.out(f"    {item.call_id} {item.tool}: {render_progress(report)}")
                    seen = report.seq
            self._progress[item.call_id] = seen


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


def _failure_message(failure: WorkflowFailureError) -> str:
    cause: BaseException | None = failure.cause
    messages: list[str] = []
    while cause is not None and len(messages) < 3:
        text = getattr(cause, "message", None) or str(cause)
        if text and text not in messages:
            messages.append(text)
        cause = cause.__cause__
    return ": ".join(messages) or str(failure)


# ------------------------------------------------------- `durable-tools watch RUN`
