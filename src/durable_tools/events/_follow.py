"""Following a run's audit stream from outside, with a cursor, into a sink.

The workflow keeps only its last `AgentConfig.events_kept` events (workflow memory is not
a log), and it may do no I/O. So the complete stream is read from outside: the follower
asks the `events_since` query for everything after its cursor, hands each event to a sink,
and moves the cursor on. Events carry their index (`seq`), continued across
continue-as-new, so nothing is missed or repeated as long as the follower polls before
`events_kept` newer events pushed an unread one out; if it falls that far behind, the
sink receives an `events.missed` event saying how many are gone.

A run's stream includes its sub-agents' (when the caller says how to reach them,
`subagent=`): an event that says a sub-agent call started (`RunEvent.started_subagent`)
starts a follower of that sub-agent's stream into the same sink, each of its events marked
with the sub-agent's run id (`RunEvent.subagent_run`); the follow returns once those
followers end too.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from temporalio.client import WorkflowExecutionStatus, WorkflowHandle, WorkflowQueryFailedError
from temporalio.service import RPCError

from durable_tools.events._sinks import EventSink
from durable_tools.protocol._event_names import MISSED_EVENT
from durable_tools.protocol._records import EventsPage
from durable_tools.workflows import RunEvent, RunStatus

__all__ = [
    "MAX_SUBAGENTS_FOLLOWED",
    "MISSED_EVENT",
    "FollowResult",
    "FollowableRun",
    "follow_events",
    "marked",
]

MAX_SUBAGENTS_FOLLOWED = 64
"""Sub-agent streams one follow reads at most (its whole tree), beyond the run's own."""

log = logging.getLogger("durable_tools.events")

_ENDED = frozenset(
    {
        RunStatus.COMPLETED,
        RunStatus.LIMIT_REACHED,
        RunStatus.FAILED,
        RunStatus.CANCELLED,
    }
)


class FollowableRun(Protocol):
    """What `follow_events` needs of a run (an `AgentRun`)."""

    @property
    def run_id(self) -> str:
        """The workflow id."""
        ...

    @property
    def handle(self) -> WorkflowHandle[Any, Any]:
        """The run's workflow handle (without a run id: it follows continue-as-new)."""
        ...

    async def events_since(self, cursor: int) -> EventsPage:
        """The `events_since` query."""
        ...


@dataclass
class FollowResult:
    """What a follow delivered."""

    cursor: int
    """The index to resume from (pass it as `cursor=` to continue later)."""
    delivered: int = 0
    """Events handed to the sink."""
    missed: int = 0
    """Events that were dropped by the run before the follower read them."""
    subagents: list[str] = field(default_factory=list)
    """The sub-agent runs whose streams were followed into the sink too."""


def marked(event: RunEvent, subagent_run: str) -> RunEvent:
    """`event` of sub-agent `subagent_run`, as its parent's stream shows it (an event
    a deeper sub-agent emitted keeps its own mark)."""
    if event.subagent_run:
        return event
    return event.model_copy(update={"subagent_run": subagent_run})


class _MarkedSink:
    """Passes a sub-agent's events to its parent's sink, marked, under the parent's id."""

    def __init__(self, sink: EventSink, run_id: str, subagent_run: str) -> None:
        self._sink, self._run_id, self._subagent_run = sink, run_id, subagent_run

    def emit(self, run_id: str, event: RunEvent) -> None:
        self._sink.emit(self._run_id, marked(event, self._subagent_run))

    def close(self) -> None:
        """The parent's sink stays open."""


async def follow_events(
    run: FollowableRun,
    sink: EventSink,
    *,
    cursor: int = 0,
    interval: float = 0.5,
    query_timeout: float = 10.0,
    until_ended: bool = True,
    subagent: Callable[[str], FollowableRun] | None = None,
) -> FollowResult:
    """Deliver the run's events from `cursor` on to `sink`, in order, until the run ends.

    Args:
        run: The run (an `AgentRun`).
        sink: Where the events go (`JsonLinesSink`, `LoggingSink`, ...). Not closed here.
        cursor: The first event index wanted (0: from the start of the run).
        interval: Seconds between polls when nothing new arrived.
        query_timeout: Seconds one query may take (it needs a worker); a query that fails
            or times out is retried after `interval`.
        until_ended: Stop once the run has ended and every event was delivered; False
            reads what is there now and returns.
        subagent: How to reach a sub-agent run by its id (`AgentRun` passes its own);
            given, the sub-agents' events are delivered too, marked (from their start,
            whatever `cursor` is). None: the run's own events only.

    Returns:
        The cursor to resume from and what was delivered.
    """
    return await _follow(run, sink, cursor, interval, query_timeout, until_ended, subagent, tree=[])


async def _follow(
    run: FollowableRun,
    sink: EventSink,
    cursor: int,
    interval: float,
    query_timeout: float,
    until_ended: bool,
    subagent: Callable[[str], FollowableRun] | None,
    *,
    tree: list[str],
) -> FollowResult:
    """`follow_events` of `run`, one run of a tree whose followed sub-agents are `tree`
    (shared by every run of the tree, so `MAX_SUBAGENTS_FOLLOWED` bounds the whole tree,
    not each run's)."""
    result = FollowResult(cursor=cursor)
    followers: list[asyncio.Task[FollowResult]] = []

    def follow_subagents(page: EventsPage) -> None:
        for event in page.events:
            child = event.started_subagent
            if subagent is None or child is None or child in tree:
                continue
            if len(tree) >= MAX_SUBAGENTS_FOLLOWED:
                return
            tree.append(child)
            result.subagents.append(child)
            followers.append(
                asyncio.ensure_future(
                    _follow(
                        subagent(child),
                        _MarkedSink(sink, run.run_id, child),
                        0,
                        interval,
                        query_timeout,
                        until_ended,
                        subagent,  # and theirs, marked with their own ids
                        tree=tree,
                    )
                )
            )

    try:
        await _follow_own(run, sink, result, interval, query_timeout, until_ended, follow_subagents)
        # The sub-agents' streams end with them (before the run, or cancelled with it).
        for follower in followers:
            try:
                theirs = await follower
            except (WorkflowQueryFailedError, RPCError, TimeoutError):
                continue  # read once (`until_ended=False`) and not answering: left out
            result.delivered += theirs.delivered
            result.missed += theirs.missed
            result.subagents += theirs.subagents
    finally:
        for follower in followers:
            follower.cancel()
    return result


async def _follow_own(
    run: FollowableRun,
    sink: EventSink,
    result: FollowResult,
    interval: float,
    query_timeout: float,
    until_ended: bool,
    on_page: Callable[[EventsPage], None],
) -> None:
    warned = False
    while True:
        try:
            # `asyncio.timeout`, not `wait_for`: on Python 3.11 `wait_for` swallows a cancellation
            # that arrives with its result, and this loop would go on after its task was cancelled.
            async with asyncio.timeout(query_timeout):
                page = await run.events_since(result.cursor)
        except (WorkflowQueryFailedError, RPCError, TimeoutError) as error:
            if not until_ended:
                raise
            if not warned:
                log.warning("run %s: events query failed (%s); retrying", run.run_id, error)
                warned = True
            await asyncio.sleep(interval)
            continue
        _deliver(run.run_id, page, sink, result)
        on_page(page)
        if result.cursor < page.total:
            continue  # a full page: more are waiting
        if not until_ended or page.status in _ENDED or not await _open(run):
            return
        await asyncio.sleep(interval)


def _deliver(run_id: str, page: EventsPage, sink: EventSink, result: FollowResult) -> None:
    if page.missed:
        result.missed += page.missed
        sink.emit(
            run_id,
            RunEvent(
                at=datetime.now(UTC),
                event=MISSED_EVENT,
                detail=f"{page.missed} events after index {result.cursor} were no longer "
                "kept by the run when the follower read them",
            ),
        )
    for event in page.events:
        sink.emit(run_id, event)
        result.delivered += 1
    result.cursor = page.next


async def _open(run: FollowableRun) -> bool:
    """Whether the run's latest execution is still open (a terminated run never says it
    ended in its own status, so the server is asked)."""
    try:
        described = await run.handle.describe()
    except RPCError:
        return True
    return described.status in (None, WorkflowExecutionStatus.RUNNING)
