"""Following a run live: its token stream, its tools' progress, and its end, merged.

`follow_stream` is what `AgentRun.stream()` returns. It subscribes to the run's stream
workflow (`<run-id>/stream`) from the start of what it keeps (the current message), so a
watcher attached late gets the message so far first. A message started again (the
model activity retried after a worker died) is announced by a `restarted` event: the
text received for it so far is void. Tool progress comes from the run's heartbeats
(`describe()`), as for `durable-tools show`, and costs no history either.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from typing import Any

from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowQueryFailedError,
    WorkflowUpdateFailedError,
)
from temporalio.contrib.workflow_streams import WorkflowStreamClient
from temporalio.service import RPCError, RPCStatusCode

from durable_tools.streaming._types import STREAM_TOPIC, StreamEvent, stream_id

__all__ = ["ProgressSource", "follow_stream", "subscribe_stream"]

_POLL_SECONDS = 0.5
_END_GRACE_SECONDS = 3.0
"""After the run ended, how long the rest of its stream may take to arrive."""


ProgressSource = Callable[[], Awaitable[list[Any]]]
"""Lists `ToolProgress` items (`AgentRun.progress`)."""


def _progress_line(report: Any) -> str:
    parts = []
    if report.fraction is not None:
        parts.append(f"{report.fraction:.0%}")
    if report.message:
        parts.append(report.message)
    return " ".join(parts) or "(working)"


async def follow_stream(
    client: Client,
    run_id: str,
    *,
    progress: ProgressSource | None = None,
    poll_interval: float = _POLL_SECONDS,
) -> AsyncIterator[StreamEvent]:
    """Yield the run's live events until it ends (the last one is `run_ended`).

    Args:
        client: A client with durable-tools' data converter.
        run_id: The agent run.
        progress: Where tool progress comes from (`AgentRun.progress`); None for none.
        poll_interval: Seconds between looks at the run's state and its tools' progress.
    """
    queue: asyncio.Queue[StreamEvent | None] = asyncio.Queue()
    run = client.get_workflow_handle(run_id)
    idle = asyncio.Event()  # set while no subscription is open
    idle.set()
    starts: dict[int, int] = {}
    tokens = asyncio.create_task(_tokens(client, run_id, queue, poll_interval, idle, starts))
    tasks = [tokens]
    if progress is not None:
        tasks.append(asyncio.create_task(_progress(progress, queue, poll_interval)))
    ended = asyncio.create_task(_run_end(run, poll_interval))
    try:
        while True:
            getter = asyncio.ensure_future(queue.get())
            done, _ = await asyncio.wait({getter, ended}, return_when=asyncio.FIRST_COMPLETED)
            if getter in done:
                event = getter.result()
                if event is not None:
                    yield event
                    continue
            else:
                getter.cancel()
            break
        status = await ended
        # The run ended: let the end of its stream arrive (the run closes it).
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(idle.wait(), _END_GRACE_SECONDS)
        if not starts:
            # Nothing seen (a run that ended before the watcher looked): read what its
            # ended stream kept, if it streamed at all.
            tokens.cancel()
            with contextlib.suppress(BaseException):
                await tokens
            kept = subscribe_stream(client, stream_id(run_id), interval=poll_interval)
            with contextlib.suppress(TimeoutError, RPCError):
                await asyncio.wait_for(_forward(kept, queue, starts), _END_GRACE_SECONDS)
        while not queue.empty():
            event = queue.get_nowait()
            if event is not None:
                yield event
        yield StreamEvent(kind="run_ended", text=status)
    finally:
        await _stop([*tasks, ended])


async def _stop(tasks: list[asyncio.Task[Any]]) -> None:
    """Cancel `tasks` and wait until each has ended.

    A task can swallow a cancellation: on Python 3.11, `asyncio.wait_for` returns its
    inner result instead of raising when that result arrives in the same turn of the
    event loop as the cancellation. A polling loop around it then polls on for ever, and
    the watcher of a client that went away never stops. So each task still running is
    cancelled again, until none is.
    """
    while pending := [task for task in tasks if not task.done()]:
        for task in pending:
            task.cancel()
        await asyncio.wait(pending, timeout=0.1)
    for task in tasks:
        with contextlib.suppress(BaseException):
            task.result()  # retrieved, so asyncio logs no "exception never retrieved"


async def _run_end(run: Any, interval: float) -> str:
    """Wait for the run (following continue-as-new) to close; its Temporal status."""
    while True:
        try:
            description = await run.describe()
        except RPCError as error:
            if error.status != RPCStatusCode.NOT_FOUND:
                raise
            return "NOT_FOUND"
        status = description.status
        if status not in (None, WorkflowExecutionStatus.RUNNING):
            if status != WorkflowExecutionStatus.CONTINUED_AS_NEW:
                return str(status.name)
            run = run._client.get_workflow_handle(run.id)  # the next run of the chain
            continue
        await asyncio.sleep(interval)


async def _tokens(
    client: Client,
    run_id: str,
    queue: asyncio.Queue[StreamEvent | None],
    interval: float,
    idle: asyncio.Event,
    starts: dict[int, int],
) -> None:
    """Subscribe to the run's stream; again when it restarts (after an idle end)."""
    handle = client.get_workflow_handle(stream_id(run_id))
    seen_first_run: str | None = None
    # A watcher that was here before the stream started wants all of it; only one that
    # finds a stream already running starts at the current message.
    here_from_the_start = False
    while True:
        try:
            description = await handle.describe()
        except RPCError as error:
            if error.status != RPCStatusCode.NOT_FOUND:
                raise
            here_from_the_start = True
            await asyncio.sleep(interval)  # no model call has streamed yet
            continue
        first_run = description.raw_description.workflow_execution_info.first_run_id
        if first_run == seen_first_run or description.status != WorkflowExecutionStatus.RUNNING:
            await asyncio.sleep(interval)  # ended; a later model call may start it again
            continue
        start = 0
        if seen_first_run is None and not here_from_the_start:
            try:  # start at the current message: what a watcher attaching now wants
                start = await handle.query("message_offset", result_type=int)
            except (RPCError, WorkflowQueryFailedError):
                start = 0
        seen_first_run = first_run
        idle.clear()
        events = subscribe_stream(client, stream_id(run_id), from_offset=start, interval=interval)
        await _forward(events, queue, starts)
        idle.set()  # the stream ended (the run closed it, or it idled out)


async def _forward(
    events: AsyncIterator[StreamEvent],
    queue: asyncio.Queue[StreamEvent | None],
    starts: dict[int, int],
) -> None:
    """Pass a stream's events on, with a `restarted` marker before a message started again.

    `starts` maps each turn seen to its attempt: a second `message_start` of a turn (or
    a first one of attempt 2 or later) means the model call was retried.
    """
    async for event in events:
        if event.kind == "message_start":
            if event.turn in starts or event.attempt > 1:
                marker = StreamEvent(kind="restarted", turn=event.turn, attempt=event.attempt)
                await queue.put(marker)
            starts[event.turn] = event.attempt
        await queue.put(event)


async def subscribe_stream(
    client: Client, workflow_id: str, *, from_offset: int = 0, interval: float = _POLL_SECONDS
) -> AsyncIterator[StreamEvent]:
    """The events of a stream workflow from `from_offset` (0: what it keeps) to its end.

    `WorkflowStreamClient.subscribe` gives up when a poll fails on a workflow task that
    failed and is being retried (a continue-as-new racing with publishes is refused by
    the server once, `UnhandledCommand`): this picks up again after the last item seen.
    """
    stream = WorkflowStreamClient.create(client, workflow_id)
    offset = from_offset
    while True:
        try:
            async for item in stream.subscribe(
                [STREAM_TOPIC],
                from_offset=offset,
                result_type=StreamEvent,
                poll_cooldown=timedelta(milliseconds=50),
            ):
                offset = item.offset + 1
                yield item.data
            return
        except (RPCError, WorkflowUpdateFailedError) as error:
            if isinstance(error, RPCError) and error.status == RPCStatusCode.NOT_FOUND:
                return
            await asyncio.sleep(interval)


async def _progress(
    source: ProgressSource, queue: asyncio.Queue[StreamEvent | None], interval: float
) -> None:
    """Tool progress reports not yet passed on, from the run's heartbeats."""
    seen: dict[tuple[str | None, str], int] = {}  # a sub-agent's call ids are its own
    while True:
        with contextlib.suppress(RPCError, TimeoutError):
            # `asyncio.timeout`, not `wait_for`, whose 3.11 version can swallow a
            # cancellation (see `_stop`).
            async with asyncio.timeout(5.0):
                items = await source()
            for item in items:
                key = (getattr(item, "run_id", None), item.call_id)
                last = seen.get(key, 0)
                for report in [*item.recent, item.progress]:
                    if report.seq > last:
                        await queue.put(
                            StreamEvent(
                                kind="tool_progress",
                                call_id=item.call_id[:200],
                                tool=item.tool[:200],
                                text=_progress_line(report)[:2000],
                                run_id=key[0],
                            )
                        )
                        last = report.seq
                seen[key] = last
        await asyncio.sleep(interval)
