"""The pending list: approvals waiting on a person, one page of runs at a time, and the
run's other waits (a question for the user, an OAuth grant, a callback client).

The runs come from Temporal's visibility store, filtered there by the search attributes
(`PendingApprovals > 0` or an `AgentStatus` that waits, `AgentName`, the workflow id),
newest first, one page per request with an opaque cursor for the next. Only the runs of
that page are asked what they wait for, through `RunQueries`: a bounded number of queries
at once for the whole app, and one query per run however many requests want it at the
same moment.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from temporalio.client import WorkflowExecution
from temporalio.service import RPCError

from durable_tools import search_attributes as sa
from durable_tools._callers._auth import decider_for
from durable_tools._callers._tokens import User
from durable_tools._encrypted import is_encrypted_payload_error
from durable_tools.client import DurableTools
from durable_tools.protocol._resume import answer_command, reissue_command
from durable_tools.protocol._types import status_in
from durable_tools.workflows import PendingApproval, RunSnapshot, RunStatus, SubagentWait

from ._hosts import run_handle

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "DEFAULT_QUERY_CONCURRENCY",
    "QUERY_TIMEOUT",
    "OtherWait",
    "PageRequestError",
    "PendingItem",
    "PendingList",
    "RunQueries",
    "SubagentItem",
    "WaitingRun",
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


HostSnapshot = tuple[str, RunSnapshot]
"""What a run waits for, with the prefix its handlers were reached under."""


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
class SubagentItem:
    """A run that waits on a sub-agent's approval: decided from the run's page, or by
    the run's id (the decision finds the sub-agent); the sub-agent is listed itself too."""

    run_id: str
    agent: str | None
    wait: SubagentWait

    @property
    def requested_at(self) -> datetime:
        """When the sub-agent asked."""
        return self.wait.requested_at


@dataclass(frozen=True)
class WaitingRun:
    """A waiting run the inbox could not ask (its payloads are encrypted and the inbox has
    no keys, or its worker did not answer): what the server shows of it."""

    run_id: str
    agent: str | None
    tool: str | None
    """The tool of its first waiting call (`AwaitingTool`)."""
    approvals: int
    """How many calls wait on a person (`PendingApprovals`)."""


@dataclass(frozen=True)
class OtherWait:
    """A call that waits on someone other than an approver: the user's answer to an MCP
    server's question, the user's OAuth grant, or a client that runs a callback tool.

    Attributes:
        run_id: The run that waits.
        agent: Its agent.
        kind: `question`, `authorization` or `callback`.
        call_id: The waiting call.
        tool: Its tool.
        waiting_for: What it waits for, in words (the question, the provider and scopes).
        resume: How it goes on: the command or party that answers it.
        since: When it started waiting.
        deadline: When it stops waiting, if ever.
    """

    run_id: str
    agent: str | None
    kind: str
    call_id: str
    tool: str
    waiting_for: str
    resume: str
    since: datetime
    deadline: datetime | None


def other_waits(
    run_id: str, agent: str | None, snapshot: RunSnapshot, prefix: str = ""
) -> list[OtherWait]:
    """The run's waits that are not approvals, each with how it is resumed (a host's
    under its runtime's handler `prefix`, which the commands must name)."""
    under = f" --prefix {shlex.quote(prefix)}" if prefix else ""
    waits = []
    for asked in snapshot.pending_inputs:
        questions = "; ".join(q.message for q in asked.questions)[:500]
        waits.append(
            OtherWait(
                run_id,
                agent,
                "question",
                asked.call_id,
                asked.tool,
                questions,
                answer_command(run_id, asked.call_id) + under,
                asked.requested_at,
                asked.deadline,
            )
        )
    for auth in snapshot.pending_authorizations:
        scopes = f" ({', '.join(auth.scopes)})" if auth.scopes else ""
        waits.append(
            OtherWait(
                run_id,
                agent,
                "authorization",
                auth.call_id,
                auth.tool,
                f"the user's grant for {auth.provider}{scopes}",
                "the user opens the link sent to them; a new one: "
                # `auth reissue` takes no --prefix: a host's link is renewed from its page.
                + (
                    "New link on the run's page"
                    if prefix
                    else reissue_command(run_id, auth.call_id)
                ),
                auth.requested_at,
                auth.deadline,
            )
        )
    for published in snapshot.pending_callbacks:
        waits.append(
            OtherWait(
                run_id,
                agent,
                "callback",
                published.call_id,
                published.tool,
                "a client that runs this callback tool",
                f"durable-tools callbacks serve {shlex.quote(run_id)} --tools MODULE{under} "
                "(or AgentRun.serve_callbacks)",
                published.published_at,
                published.deadline,
            )
        )
    return waits


@dataclass
class PendingList:
    """One page of pending approvals, newest first.

    Attributes:
        items: The approvals shown.
        unanswered: Runs of the page that wait but did not answer (no worker polling, or
            none in time).
        encrypted: Runs of the page whose payloads are encrypted and the inbox has no keys.
        hidden: Approvals of the page left out because the user may not decide them.
        subagents: The page's runs that wait on a sub-agent's approval (each sub-agent
            is a run of the page too, when it waits itself).
        waits: The page's runs' other waits (questions, grants, callback clients).
        next_cursor: Where the next page starts; None when this is the last page.
    """

    items: list[PendingItem] = field(default_factory=list)
    subagents: list[SubagentItem] = field(default_factory=list)
    waits: list[OtherWait] = field(default_factory=list)
    unanswered: list[WaitingRun] = field(default_factory=list)
    encrypted: list[WaitingRun] = field(default_factory=list)
    hidden: int = 0
    next_cursor: str | None = None

    @property
    def unreachable(self) -> list[str]:
        """The ids of the runs that did not answer."""
        return [run.run_id for run in self.unanswered]


class RunQueries:
    """Asks runs what they wait for (their `status`), bounded and shared.

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
        self._in_flight: dict[str, asyncio.Task[HostSnapshot]] = {}
        self.sent = 0
        """Queries sent so far."""
        self.peak = 0
        """The most queries that were in flight at once."""
        self._running = 0

    async def snapshot(self, execution: WorkflowExecution) -> HostSnapshot:
        """What a listed run itself waits for (its sub-agents are runs of their own; a
        host's runtime is reached under its handlers' prefix, `run_handle`), with that
        prefix ("" for an agent run)."""
        run_id = execution.id
        task = self._in_flight.get(run_id)
        if task is None:
            task = asyncio.ensure_future(self._ask(execution))
            self._in_flight[run_id] = task
            task.add_done_callback(lambda done: self._forget(run_id, done))
        # Shielded: one request going away must not cancel the query others wait on.
        return await asyncio.shield(task)

    def _forget(self, run_id: str, done: asyncio.Task[HostSnapshot]) -> None:
        if self._in_flight.get(run_id) is done:
            del self._in_flight[run_id]
        if not done.cancelled():
            done.exception()  # retrieved, so an answer nobody waited for logs nothing

    async def _ask(self, execution: WorkflowExecution) -> HostSnapshot:
        async with self._slots:
            self.sent += 1
            self._running += 1
            self.peak = max(self.peak, self._running)
            try:
                run = await run_handle(self._tools, execution.id, execution)
                snapshot = await asyncio.wait_for(run.status(), QUERY_TIMEOUT)
            finally:
                self._running -= 1
        return run.prefix, snapshot


def _literal(name: str, value: str) -> str:
    if _UNSAFE_LITERAL.search(value):
        raise PageRequestError(f"{name} must not hold quotes, backslashes or control characters")
    return f"'{value}'"


_OTHER_WAITS = (
    RunStatus.AWAITING_INPUT,
    RunStatus.AWAITING_AUTHORIZATION,
    RunStatus.AWAITING_CALLBACK,
)
"""What a run may wait for beside approvals that the pending list shows (not a session's
next message: the user's chat front end sends it, not someone reading the inbox)."""


def _visibility_query(agent: str | None, run_id: str | None) -> str:
    # Any workflow type: agent runs, and hosts whose runtime sets the same attributes.
    query = (
        "ExecutionStatus = 'Running' "
        f"AND ({sa.PENDING_APPROVALS.name} > 0 OR {status_in(_OTHER_WAITS)})"
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
    answers = await asyncio.gather(*(queries.snapshot(run) for run in runs), return_exceptions=True)
    result = PendingList(next_cursor=next_cursor)

    def listed(call_tool: str, deciders: Sequence[str] | None) -> bool:
        """Whether a call of `call_tool` that `deciders` may decide (empty: anyone; None:
        not told, as by a sub-agent of the previous release) is listed for `user`; one the
        filters keep but `user` may not decide is counted as hidden instead."""
        if tool and call_tool != tool:
            return False
        if decider and (deciders is None or (deciders and decider not in deciders)):
            return False
        shown = everything or (deciders is not None and decider_for(user, deciders) is not None)
        result.hidden += not shown
        return shown

    for run, answer in zip(runs, answers, strict=True):
        name = run.typed_search_attributes.get(sa.AGENT_NAME)
        if isinstance(answer, BaseException):
            attributes = run.typed_search_attributes
            shown = WaitingRun(
                run.id,
                name,
                attributes.get(sa.AWAITING_TOOL) or None,
                attributes.get(sa.PENDING_APPROVALS) or 0,
            )
            encrypted = is_encrypted_payload_error(answer)
            (result.encrypted if encrypted else result.unanswered).append(shown)
            continue
        prefix, snapshot = answer
        waits = other_waits(run.id, name, snapshot, prefix)
        result.waits += [w for w in waits if not tool or w.tool == tool]
        result.subagents += [
            SubagentItem(run.id, name, wait)
            for wait in snapshot.subagent_approvals
            if listed(wait.tool, wait.deciders)
        ]
        result.items += [
            PendingItem(
                run.id,
                name,
                approval,
                may_decide=decider_for(user, approval.deciders) is not None,
            )
            for approval in snapshot.pending_approvals
            if listed(approval.tool, approval.deciders)
        ]
    result.items.sort(key=lambda item: item.requested_at, reverse=True)
    result.waits.sort(key=lambda wait: wait.since, reverse=True)
    result.subagents.sort(key=lambda item: item.requested_at, reverse=True)
    return result
