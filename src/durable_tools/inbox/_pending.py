"""The pending list: approvals waiting on a person, one page of runs at a time.

The runs come from Temporal's visibility store, filtered there by the search attributes
(`PendingApprovals > 0`, `AgentName`, the workflow id), newest first, one page per request
with an opaque cursor for the next. Only the runs of that page are asked for their pending
approvals, through `RunQueries`: a bounded number of queries at once for the whole app,
and one query per run however many requests want it at the same moment.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from temporalio.client import WorkflowExecution
from temporalio.service import RPCError

from durable_tools import search_attributes as sa
from durable_tools._encrypted import is_encrypted_payload_error
from durable_tools.client import DurableTools
from durable_tools.workflows import PendingApproval

from ._auth import decider_for
from ._tokens import User

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "DEFAULT_QUERY_CONCURRENCY",
    "QUERY_TIMEOUT",
    "EncryptedPending",
    "PageRequestError",
    "PendingItem",
    "PendingList",
    "RunQueries",
    "list_pending",
]

QUERY_TIMEOUT = 10.0
"""Seconds a run (its worker) has to answer a query before the inbox gives up on it."""
DEFAULT_PAGE_SIZE = 50
"""Runs per page of the pending list."""
DEFAULT_QUERY_CONCURRENCY = 16
"""Run queries the inbox has in flight at once, across all requests."""
_MAX_CURSOR_CHARS = 4096
# Visibility queries take single-quoted literals: refuse what could end one.
_UNSAFE_LITERAL = re.compile(r"['\\\x00-\x1f\x7f]")


class PageRequestError(ValueError):
    """A filter or cursor the pending list cannot use (the request's fault: HTTP 400)."""


@dataclass(frozen=True)
class PendingItem:
    """One call waiting on a person, in the run that waits for it."""

    run_id: str
    agent: str | None
    approval: PendingApproval
    may_decide: bool = True

    @property
    def requested_at(self) -> datetime:
        """When the approval was asked for."""
        return self.approval.requested_at


@dataclass(frozen=True)
class EncryptedPending:
    """A waiting run whose payloads this inbox cannot decrypt: what the server shows of it."""

    run_id: str
    agent: str | None
    tool: str | None
    """The tool of its first waiting call (`AwaitingTool`)."""
    approvals: int
    """How many calls wait on a person (`PendingApprovals`)."""


@dataclass
class PendingList:
    """One page of pending approvals, newest first.

    Attributes:
        items: The approvals shown.
        unreachable: Runs of the page that did not answer.
        encrypted: Runs of the page whose payloads are encrypted and the inbox has no keys.
        hidden: Approvals of the page left out because the user may not decide them.
        next_cursor: Where the next page starts; None when this is the last page.
    """

    items: list[PendingItem] = field(default_factory=list)
    unreachable: list[str] = field(default_factory=list)
    encrypted: list[EncryptedPending] = field(default_factory=list)
    hidden: int = 0
    next_cursor: str | None = None


class RunQueries:
    """Asks runs for their pending approvals, bounded and shared.

    At most `concurrency` queries run at once (the rest wait their turn; a run's
    `QUERY_TIMEOUT` starts when its query is sent, so waiting does not make it
    "unreachable"), and requests that want the same run while its query is in flight
    share that query's answer.

    Args:
        tools: The client.
        concurrency: Queries in flight at once.
    """

    def __init__(self, tools: DurableTools, concurrency: int = DEFAULT_QUERY_CONCURRENCY) -> None:
        if concurrency < 1:
            raise ValueError("query concurrency must be at least 1")
        self._tools = tools
        self._slots = asyncio.Semaphore(concurrency)
        self._in_flight: dict[str, asyncio.Task[list[PendingApproval]]] = {}
        self.sent = 0
        """Queries sent so far."""
        self.peak = 0
        """The most queries that were in flight at once."""
        self._running = 0

    async def approvals(self, run_id: str) -> list[PendingApproval]:
        """The approvals run `run_id` itself waits for (its sub-agents are runs of their own)."""
        task = self._in_flight.get(run_id)
        if task is None:
            task = asyncio.ensure_future(self._ask(run_id))
            self._in_flight[run_id] = task
            task.add_done_callback(lambda done: self._forget(run_id, done))
        # Shielded: one request going away must not cancel the query others wait on.
        return await asyncio.shield(task)

    def _forget(self, run_id: str, done: asyncio.Task[list[PendingApproval]]) -> None:
        if self._in_flight.get(run_id) is done:
            del self._in_flight[run_id]
        if not done.cancelled():
            done.exception()  # retrieved, so an answer nobody waited for logs nothing

    async def _ask(self, run_id: str) -> list[PendingApproval]:
        async with self._slots:
            self.sent += 1
            self._running += 1
            self.peak = max(self.peak, self._running)
            try:
                run = self._tools.run(run_id)
                snapshot = await asyncio.wait_for(run.status(), QUERY_TIMEOUT)
            finally:
                self._running -= 1
        return list(snapshot.pending_approvals)


def _literal(name: str, value: str) -> str:
    if _UNSAFE_LITERAL.search(value):
        raise PageRequestError(f"{name} must not hold quotes, backslashes or control characters")
    return f"'{value}'"


def _visibility_query(agent: str | None, run_id: str | None) -> str:
    query = (
        "WorkflowType = 'AgentWorkflow' AND ExecutionStatus = 'Running' "
        f"AND {sa.PENDING_APPROVALS.name} > 0"
    )
    if agent:
        query += f" AND {sa.AGENT_NAME.name} = {_literal('agent', agent)}"
    if run_id:
        query += f" AND WorkflowId = {_literal('run', run_id)}"
    return query


def _decode_cursor(cursor: str | None) -> bytes | None:
    if not cursor:
        return None
    if len(cursor) > _MAX_CURSOR_CHARS:
        raise PageRequestError("page cursor too long")
    try:
        return base64.urlsafe_b64decode(cursor.encode("ascii") + b"=" * (-len(cursor) % 4))
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise PageRequestError("page cursor is not one this inbox gave out") from None


def _encode_cursor(token: bytes | None) -> str | None:
    return base64.urlsafe_b64encode(token).rstrip(b"=").decode("ascii") if token else None


async def _page_of_runs(
    tools: DurableTools, query: str, page_size: int, cursor: str | None
) -> tuple[Sequence[WorkflowExecution], str | None]:
    listing = tools.client.list_workflows(
        query, page_size=page_size, next_page_token=_decode_cursor(cursor)
    )
    try:
        await listing.fetch_next_page()
    except RPCError as error:
        if cursor:  # the server could not use the token it was handed back
            raise PageRequestError(f"page cursor refused: {error.message}") from None
        raise
    return listing.current_page or [], _encode_cursor(listing.next_page_token)


async def list_pending(
    tools: DurableTools,
    queries: RunQueries,
    user: User,
    *,
    agent: str | None = None,
    tool: str | None = None,
    decider: str | None = None,
    run_id: str | None = None,
    everything: bool = False,
    page_size: int = DEFAULT_PAGE_SIZE,
    cursor: str | None = None,
) -> PendingList:
    """One page of the approvals pending across runs.

    Args:
        tools: The client.
        queries: Asks the page's runs (bounded, shared).
        user: Who is asking: by default only the approvals they may decide are listed.
        agent: Only runs of this agent (`AgentName`).
        tool: Only calls of this tool.
        decider: Only calls this name may decide (named, or anyone may).
        run_id: Only this run.
        everything: Also the approvals `user` may not decide (each says whether they may).
        page_size: Runs per page.
        cursor: Where the page starts (a previous page's `next_cursor`).

    Raises:
        PageRequestError: a filter or cursor that cannot be used.
    """
    query = _visibility_query(agent, run_id)
    runs, next_cursor = await _page_of_runs(tools, query, page_size, cursor)
    answers = await asyncio.gather(
        *(queries.approvals(run.id) for run in runs), return_exceptions=True
    )
    result = PendingList(next_cursor=next_cursor)
    for run, answer in zip(runs, answers, strict=True):
        name = run.typed_search_attributes.get(sa.AGENT_NAME)
        if isinstance(answer, BaseException) and is_encrypted_payload_error(answer):
            attributes = run.typed_search_attributes
            result.encrypted.append(
                EncryptedPending(
                    run.id,
                    name,
                    attributes.get(sa.AWAITING_TOOL) or None,
                    attributes.get(sa.PENDING_APPROVALS) or 0,
                )
            )
            continue
        if isinstance(answer, BaseException):
            result.unreachable.append(run.id)
            continue
        for approval in answer:
            if tool and approval.tool != tool:
                continue
            if decider and approval.deciders and decider not in approval.deciders:
                continue
            mine = decider_for(user, approval.deciders) is not None
            if not mine and not everything:
                result.hidden += 1
                continue
            result.items.append(PendingItem(run.id, name, approval, may_decide=mine))
    result.items.sort(key=lambda item: item.requested_at, reverse=True)
    return result
