"""The pending list: approvals waiting on a person, one page of runs at a time, and the
run's other waits (a question for the user, an OAuth grant, a callback client).

The runs come from Temporal's visibility store, filtered there by the search attributes
(`PendingApprovals > 0` or an `AgentStatus` that waits, `AgentName`, the workflow id),
newest first, one page per request with an opaque cursor for the next. Only the runs of
that page are asked what they wait for, through `RunQueries`: a bounded number of queries
at once for the whole app, one query per run however many requests want it at the same
moment, and about one query timeout per page however many of its runs' workers are gone.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import math
import re
import shlex
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from temporalio.client import WorkflowExecution
from temporalio.common import TypedSearchAttributes
from temporalio.service import RPCError

from durable_tools import search_attributes as sa
from durable_tools._callers._auth import decider_for
from durable_tools._callers._tokens import User
from durable_tools._encrypted import is_encrypted_payload_error
from durable_tools.client import DurableTools
from durable_tools.client.runs._workers import has_workers
from durable_tools.protocol._resume import answer_command, reissue_command
from durable_tools.protocol._types import status_in
from durable_tools.workflows import PendingApproval, RunSnapshot, RunStatus, SubagentWait

from ._hosts import run_handle

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "DEFAULT_QUERY_CONCURRENCY",
    "QUERY_TIMEOUT",
    "UNANSWERED_MEMORY",
    "NotAnswering",
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
UNANSWERED_MEMORY = 30.0
"""Seconds a run whose query timed out is shown as not answering without being asked
again (sooner once what the server lists of it changes)."""
_PAGE_MARGIN = 1.0
# Seconds a page waits beyond one query timeout: the runs asked at once report their own
# timeout.
_MAX_REMEMBERED = 10_000
# Runs remembered as not answering; the oldest are forgotten first.
_T = TypeVar("_T")
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
            none in time), named only when the page would name them whatever their
            answer: with `everything`, or when they wait for no approval.
        encrypted: Runs of the page whose payloads are encrypted and the inbox has no keys.
        hidden: Approvals of the page left out because the user may not decide them, or
            because their run did not answer and is not named.
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


class NotAnswering(Exception):
    """A run the inbox did not hear from in time: its query timed out, the page's time ran
    out before its turn, no worker polls its task queue, or it timed out lately."""


class RunQueries:
    """Asks runs what they wait for (their `status`), bounded and shared.

    At most `concurrency` calls to the server run at once (the rest wait their turn), and
    requests that want the same run while its query is in flight share that query's
    answer. A page of runs is answered within about one `timeout`, however many of its
    runs do not answer (`answers`):

    - a run whose task queue no worker polls (`has_workers`) is not asked;
    - a run whose query timed out is not asked again for `remember` seconds, unless what
      the server lists of it changed meanwhile (its search attributes, its Temporal run
      id, its history length where the server reports it: this dev server does not for
      a running workflow);
    - of each task queue, one run is asked first and the others once it answered: when
      it times out, they are not asked on this page (their worker is likely the one
      gone: a dead worker costs one timeout, not one per run), but only the run that
      timed out is remembered, so the next page asks them (one run whose query hangs
      on a live worker does not hide its neighbours);
    - what has not answered when the page's time is up (a query that timed out, or one
      still waiting for its turn) is shown as not answering, remembered only once its
      own query timed out; a query already sent goes on, so the next page knows, and
      one no page waits for any more is not sent.

    Nothing that answered is kept: every page asks again, so a decision is never shown
    as still pending.

    Args:
        tools: The client.
        concurrency: Calls to the server in flight at once.
        timeout: Seconds a run's query may take, and a page's wait for its runs.
        remember: Seconds a run that timed out is not asked again.
    """

    def __init__(
        self,
        tools: DurableTools,
        concurrency: int = DEFAULT_QUERY_CONCURRENCY,
        *,
        timeout: float = QUERY_TIMEOUT,
        remember: float = UNANSWERED_MEMORY,
    ) -> None:
        if concurrency < 1:
            raise ValueError("query concurrency must be at least 1")
        if not (math.isfinite(timeout) and timeout > 0):
            raise ValueError("query timeout must be a positive number of seconds")
        if not (math.isfinite(remember) and remember >= 0):
            raise ValueError("remember must be zero or more seconds")
        self._tools = tools
        self._timeout = timeout
        self._remember = remember
        self._slots = asyncio.Semaphore(concurrency)
        self._in_flight: dict[str, asyncio.Task[HostSnapshot]] = {}
        self._polled: dict[str, asyncio.Task[bool]] = {}
        # Run id -> (its listing when it timed out, until when).
        self._silent_runs: dict[str, tuple[_Listing, float]] = {}
        # Run id -> how many pages wait for its answer now.
        self._waiting: dict[str, int] = {}
        self.sent = 0
        """Queries sent so far."""
        self.peak = 0
        """The most calls to the server that were in flight at once."""
        self._running = 0

    async def answers(
        self, runs: Sequence[WorkflowExecution]
    ) -> list[HostSnapshot | BaseException]:
        """What each listed run itself waits for (its sub-agents are runs of their own; a
        host's runtime is reached under its handlers' prefix, `run_handle`), with that
        prefix ("" for an agent run), or why it did not answer, in the order of `runs`.

        Returns within about one `timeout`; a request going away does not cancel the
        queries others may wait on.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._timeout + _PAGE_MARGIN
        polled = await self._polled_queues({run.task_queue for run in runs}, deadline)
        answers: list[HostSnapshot | BaseException] = []
        asked: dict[int, asyncio.Task[HostSnapshot]] = {}
        followers: list[asyncio.Task[HostSnapshot]] = []
        # The first run of each task queue is asked first; the others once it answered.
        first_of_queue: dict[str, tuple[WorkflowExecution, asyncio.Task[HostSnapshot]]] = {}
        for index, run in enumerate(runs):
            # Not asked in time (its turn behind the bounded slots did not come): shown as
            # not answering on this page only, and not sent once no page waits for it.
            answers.append(NotAnswering(f"no answer within {self._timeout:g} s"))
            if not polled[run.task_queue]:
                answers[index] = NotAnswering(f"no worker polls task queue {run.task_queue}")
            elif self._silent(run):
                answers[index] = NotAnswering("did not answer lately")
            elif (first := first_of_queue.get(run.task_queue)) is None:
                asked[index] = self._query(run)
                first_of_queue[run.task_queue] = (run, asked[index])
            else:
                asked[index] = asyncio.ensure_future(self._after(*first, run))
                followers.append(asked[index])
        waiting = [runs[index].id for index in asked]
        for run_id in waiting:
            self._waiting[run_id] = self._waiting.get(run_id, 0) + 1
        try:
            if asked:
                await asyncio.wait(set(asked.values()), timeout=max(0.0, deadline - loop.time()))
        finally:
            for follower in followers:
                follower.cancel()  # not yet asked: the next page asks again
            for run_id in waiting:
                self._waiting[run_id] -= 1
                if not self._waiting[run_id]:
                    del self._waiting[run_id]
        for index, task in asked.items():
            if task.done() and not task.cancelled():
                answers[index] = task.exception() or task.result()
        return answers

    async def _after(
        self,
        first: WorkflowExecution,
        first_answer: asyncio.Task[HostSnapshot],
        run: WorkflowExecution,
    ) -> HostSnapshot:
        """`run`'s answer, asked once `first` (of its task queue) answered or failed.

        When `first` timed out, `run` is not asked on this page (its worker is likely the
        one gone, and a page waits one timeout): shown as not answering, but not
        remembered, so the next page (on which `first` is remembered) asks it.
        """
        await asyncio.wait({first_answer})
        if self._silent(first):
            raise NotAnswering("the run asked first on its task queue did not answer")
        # Shielded: this page giving up must not cancel a query other pages may share.
        return await asyncio.shield(self._query(run))

    # ------------------------------------------------------------------ task queues

    async def _polled_queues(self, queues: set[str], deadline: float) -> dict[str, bool]:
        """Whether a worker polls each task queue (True when the server did not say in
        time: the query decides then)."""
        checks = {queue: self._shared(self._polled, queue, self._check_queue) for queue in queues}
        if checks:
            timeout = max(0.0, deadline - asyncio.get_running_loop().time())
            await asyncio.wait(set(checks.values()), timeout=timeout)
        return {queue: _polled(task) for queue, task in checks.items()}

    async def _check_queue(self, queue: str) -> bool:
        async with self._turn():
            return await has_workers(self._tools.client, queue)

    # ------------------------------------------------------------------ runs

    def _silent(self, run: WorkflowExecution) -> bool:
        """Whether `run` timed out lately (and did not move since): it is not asked again."""
        now = asyncio.get_running_loop().time()
        remembered = self._silent_runs.get(run.id)
        return remembered is not None and remembered[1] > now and remembered[0] == _listing(run)

    def _mark_silent(self, run: WorkflowExecution) -> None:
        """Remember that `run`'s own query timed out."""
        now = asyncio.get_running_loop().time()
        self._silent_runs.pop(run.id, None)  # re-inserted last: the oldest go first
        self._silent_runs[run.id] = (_listing(run), now + self._remember)
        while len(self._silent_runs) > _MAX_REMEMBERED:
            del self._silent_runs[next(iter(self._silent_runs))]

    def _query(self, run: WorkflowExecution) -> asyncio.Task[HostSnapshot]:
        return self._shared(self._in_flight, run.id, lambda _: self._ask(run))

    async def _ask(self, execution: WorkflowExecution) -> HostSnapshot:
        async with self._turn():
            if execution.id not in self._waiting:
                # Every page that wanted it gave up before its turn came: not sent, so a
                # frozen worker costs a page at most `concurrency` queries, not one per run.
                raise NotAnswering("no page waits for its answer any more")
            self.sent += 1
            run = await run_handle(self._tools, execution.id, execution)
            clock = asyncio.get_running_loop()
            sent_at = clock.time()
            try:
                snapshot = await asyncio.wait_for(run.status(), self._timeout)
            except Exception:
                # Took the whole timeout, whatever it ended with (the server's own error
                # for a query its worker never answered can land with our timeout).
                if clock.time() - sent_at >= self._timeout:
                    self._mark_silent(execution)
                raise
        return run.prefix, snapshot

    # ------------------------------------------------------------------ sharing

    @asynccontextmanager
    async def _turn(self) -> AsyncIterator[None]:
        """One of the `concurrency` slots, for one call to the server."""
        async with self._slots:
            self._running += 1
            self.peak = max(self.peak, self._running)
            try:
                yield
            finally:
                self._running -= 1

    def _shared(
        self,
        table: dict[str, asyncio.Task[_T]],
        key: str,
        start: Callable[[str], Coroutine[Any, Any, _T]],
    ) -> asyncio.Task[_T]:
        """The task in flight for `key` in `table`, started by `start(key)` if none is.

        A finished task leaves the table, so a later page asks again.
        """
        task = table.get(key)
        if task is None:
            task = asyncio.ensure_future(start(key))
            table[key] = task

            def forget(done: asyncio.Task[_T]) -> None:
                if table.get(key) is done:
                    del table[key]
                if not done.cancelled():
                    done.exception()  # retrieved, so an answer nobody waited for logs nothing

            task.add_done_callback(forget)
        return task


_Listing = tuple[str | None, int, TypedSearchAttributes]


def _listing(run: WorkflowExecution) -> _Listing:
    """What the server lists of a run that changes when the run moves on."""
    return run.run_id, run.history_length, run.typed_search_attributes


def _polled(check: asyncio.Task[bool]) -> bool:
    """A task queue check's verdict: True (the query decides) when it did not end in time."""
    if check.done() and not check.cancelled() and check.exception() is None:
        return check.result()
    return True


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
    answers = await queries.answers(runs)
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
            if tool and shown.tool != tool:
                continue  # what the server lists of it says it waits for another tool
            if is_encrypted_payload_error(answer):
                result.encrypted.append(shown)
            elif everything or not shown.approvals:
                result.unanswered.append(shown)
            else:
                # Who may decide its calls is in its answer: without it, a user who may
                # not would learn the run through this list. Counted, not named.
                result.hidden += shown.approvals
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
