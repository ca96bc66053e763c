"""Per-model rate limits: the limiter's booking rules, then runs on the dev server whose
model calls reach a fake provider on 127.0.0.1 no faster than the worker's `ModelLimits`."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType, WorkflowTaskFailedCause
from temporalio.client import (
    Client,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)

import fake_openai
from durable_tools import AgentConfig, DurableTools, RunStatus, ToolRegistry
from durable_tools.models import aclose_shared_clients
from durable_tools.protocol._limiter import (
    ADJUST_SIGNAL,
    LEASE_UPDATE,
    LIMITER_WORKFLOW,
    MAX_CARRIED_ENTRIES,
    MAX_WINDOW_ENTRIES,
    RESERVE_UPDATE,
    SETTLE_SIGNAL,
    Adjustment,
    LeaseGrant,
    LeaseRequest,
    LimitedCall,
    LimiterInput,
    Reservation,
    ReserveRequest,
    SettleRequest,
    Window,
    carried,
    limiter_id,
    limiter_task_queue,
)
from durable_tools.tools import FileSystemArtifactStore
from durable_tools.worker import ModelLimits
from fake_openai import FakeOpenAIServer, RecordedRequest, chat_completion, tool_call
from support import assert_not_wedged, event_attributes, running_worker

# ----------------------------------------------------------------- booking rules (pure)


def ask(limits: ModelLimits, tokens: int = 0, max_delay: float = 1e4, call: str = "") -> Any:
    return ReserveRequest(limits=limits, tokens=tokens, max_delay=max_delay, call=call)


def copy(window: Window) -> Window:
    """A window to try a booking on, leaving `window` as it is."""
    return Window([call.model_copy() for call in window.calls])


def lease(
    limits: ModelLimits,
    tokens: list[int],
    *,
    name: str,
    max_delay: float = 1e4,
    adjust: list[Adjustment] | None = None,
) -> LeaseRequest:
    return LeaseRequest(
        limits=limits, tokens=tokens, max_delay=max_delay, lease=name, adjust=adjust or []
    )


def test_requests_per_window_hold_in_every_window() -> None:
    limits = ModelLimits(requests_per_minute=120, window_seconds=1.0)  # 2 a second
    window = Window([])
    starts = []
    for now in [0.0] * 5 + [0.5] * 3:
        reservation = window.book(now, ask(limits))
        assert reservation.booked
        starts.append(now + reservation.delay)
    # Each booking counts for the window and the grace of a late start (a tenth of it).
    assert starts == pytest.approx([0.0, 0.0, 1.1, 1.1, 2.2, 2.2, 3.3, 3.3])
    # Any half-open window of one second holds at most two starts.
    for start in starts:
        assert sum(1 for s in starts if start <= s < start + 1.0) <= 2


def test_tokens_per_window_count_estimates_until_settled() -> None:
    limits = ModelLimits(tokens_per_minute=6_000, window_seconds=1.0)  # 100 a second
    window = Window([])
    assert window.book(0.0, ask(limits, 60, call="a")).delay == 0.0
    # 60 + 60 > 100: by its estimate, the first leaves no room in its window (and grace).
    assert copy(window).book(0.0, ask(limits, 60, call="b")).delay == pytest.approx(1.1)
    # It turned out to cost 10: 10 + 60 fits.
    window.settle(SettleRequest(call="a", tokens=10))
    assert window.book(0.0, ask(limits, 60, call="b")).delay == 0.0
    # 10 + 60 + 40 > 100: the third waits until the first is out of the window.
    assert window.book(0.5, ask(limits, 40, call="c")).delay == pytest.approx(0.6)
    # A call larger than a whole window waits for a window with nothing else in it: the
    # third starts at 1.1, so this one at 2.2; at 2.0 the first two no longer count at all.
    assert window.book(1.0, ask(limits, 500, call="d")).delay == pytest.approx(1.2)
    window.settle(SettleRequest(call="gone", tokens=1))  # unknown: nothing changes
    window.book(2.0, ask(limits, 0, call="e"))
    kept = [(c.call, c.start, c.tokens) for c in window.calls]
    assert kept == [
        ("c", pytest.approx(1.1), 40),
        ("d", pytest.approx(2.2), 500),
        ("e", pytest.approx(3.3), 0),
    ]


def test_a_start_past_max_delay_is_not_booked() -> None:
    limits = ModelLimits(requests_per_minute=1)
    window = Window([])
    assert window.book(0.0, ask(limits, max_delay=10)).booked
    refused = window.book(5.0, ask(limits, max_delay=10))
    assert (refused.booked, refused.delay) == (False, 56.0)  # a minute and a second's grace
    assert len(window.calls) == 1  # nothing booked for it


def starts_in_busiest_window(starts: list[float], window: float) -> int:
    """The most starts any half-open window of `window` seconds holds."""
    ordered = sorted(starts)
    most = first = 0
    for last, start in enumerate(ordered):
        while ordered[first] <= start - window:
            first += 1
        most = max(most, last - first + 1)
    return most


def test_a_window_past_its_bound_still_carries_over() -> None:
    """6,000 calls booked in one window (no limit binds), each under a hostile 200-char
    name and the longest wait: the window keeps at most its bound of entries, and the
    continue-as-new input built from it decodes (it used to fail "at most 5000 items")."""
    limits = ModelLimits(requests_per_minute=1e9, tokens_per_minute=10**12)
    window = Window([])
    for n in range(6_000):
        name = f"{n:06d}" + "x" * 194
        assert window.book(n * 0.001, ask(limits, 10**6, max_delay=86_400, call=name)).booked
        assert len(window.calls) <= MAX_WINDOW_ENTRIES
    carried_over = LimiterInput(spec="openai:x", calls=window.calls).model_dump_json()
    assert len(carried_over) < 1_000_000
    again = LimiterInput.model_validate_json(carried_over)
    assert sum(call.requests for call in again.calls) == 6_000
    assert sum(call.tokens for call in again.calls) == 6_000 * 10**6


def test_merged_entries_never_let_a_window_exceed_its_limits() -> None:
    """A limit that binds with more calls per window than the window keeps entries: the
    oldest merge, every window of the starts handed out stays within the limit, and calls
    still start (the merged ones are counted a little long, not for ever)."""
    per_window = MAX_WINDOW_ENTRIES + MAX_WINDOW_ENTRIES // 4
    limits = ModelLimits(requests_per_minute=per_window)
    window = Window([])
    starts = []
    for n in range(3 * per_window):
        now = n * 0.005  # 200 calls a second asked for, 50 a second allowed
        reservation = window.book(now, ask(limits, call=f"c{n}"))
        assert reservation.booked
        starts.append(now + reservation.delay)
        assert len(window.calls) <= MAX_WINDOW_ENTRIES
    assert starts_in_busiest_window(starts, 60.0) == per_window
    assert starts[-1] < 3 * 60.0 * 1.5  # three windows' worth start within four and a half


def test_a_lease_books_a_worker_s_waiting_calls_at_once() -> None:
    limits = ModelLimits(requests_per_minute=300, window_seconds=1.0)  # 5 a second
    window = Window([])
    # With room for all the window holds and them, the calls may start any time in the
    # next quarter window (and a grace): they are kept as if they started at its end.
    fits = window.grant(0.0, lease(limits, [1, 2, 3], name="a"))
    assert (fits.starts, fits.wait, fits.at, fits.grace) == ([0.0] * 3, None, 0.25, 0.35)
    assert [(c.call, c.requests, c.tokens, c.start) for c in window.calls] == [("a", 3, 6, 0.25)]
    # Two more fit this window; the rest start in the next ones, one by one, in order
    # (each counted for the window and the grace of a late start, 1.1 s).
    spread = window.grant(0.5, lease(limits, [1] * 9, name="b"))
    assert spread.starts == pytest.approx([0.5, 0.5, 1.35, 1.35, 1.35, 1.6, 1.6, 2.45, 2.45])
    # A start past the longest wait is not booked: the grant says how long it would be.
    short = window.grant(0.5, lease(limits, [1, 1], name="c", max_delay=2.0))
    assert (short.starts, short.wait) == (pytest.approx([2.45]), pytest.approx(2.2))
    # However late in their hold the first three start, no window holds more than 5.
    for late in (0.0, 0.35):
        starts = [late] * 3 + [*spread.starts, *short.starts]
        assert starts_in_busiest_window(starts, 1.0) == 5


def test_adjustments_return_slots_and_settle_tokens() -> None:
    limits = ModelLimits(requests_per_minute=120, tokens_per_minute=6_000, window_seconds=1.0)
    window = Window([])
    first = window.grant(0.0, lease(limits, [40, 40], name="a"))  # 2 a second, 100 tokens
    assert (first.starts, first.at) == ([0.0, 0.0], 0.25)
    assert copy(window).grant(0.0, lease(limits, [10], name="b")).starts == [1.35]
    # One slot comes back unused, the other call cost 5 tokens, not 40.
    back = Adjustment(lease="a", start=0.25, returned=1, tokens=-40)
    used = Adjustment(lease="a", start=0.25, tokens=5 - 40)
    assert window.grant(0.0, lease(limits, [90], name="b", adjust=[back, used])).starts == [0.0]
    # Forged adjustments can neither take an entry below nothing nor touch another's.
    forged = [
        Adjustment(lease="b", start=0.0, returned=200, tokens=-(10**12)),
        Adjustment(lease="nobody", start=0.0, returned=1),
        Adjustment(lease="a", start=123.0, returned=1),
    ]
    window.adjust(forged)
    assert [(c.call, c.requests, c.tokens) for c in window.calls] == [("a", 1, 5), ("b", 1, 90)]


def test_a_forged_carried_window_is_sorted_and_bounded() -> None:
    far = 10.0**12
    forged = [LimitedCall(start=t, call="x" * 200) for t in reversed(range(MAX_CARRIED_ENTRIES))]
    window = carried([*forged, LimitedCall(start=far, requests=10**9)], now=0.0)
    assert len(window) == MAX_WINDOW_ENTRIES
    assert [c.start for c in window] == sorted(c.start for c in window)
    assert sum(c.requests for c in window) == MAX_CARRIED_ENTRIES  # the far one dropped


@pytest.mark.parametrize(
    "given",
    [
        {},
        {"requests_per_minute": 0},
        {"requests_per_minute": float("nan")},
        {"requests_per_minute": float("inf")},
        {"tokens_per_minute": -1},
        {"requests_per_minute": 1, "window_seconds": 0},
        {"requests_per_minute": 1, "window_seconds": 1e9},
    ],
)
def test_model_limits_refuse_what_cannot_be_enforced(given: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        ModelLimits(**given)


def test_a_long_spec_gets_a_bounded_limiter_id() -> None:
    assert limiter_id("q", "openai:gpt-4.1") == "durable-tools-model-limit/q/openai:gpt-4.1"
    assert len(limiter_id("q", "scripted:/" + "x" * 4_000)) < 120


def test_worker_refuses_model_limits_that_are_no_limits(client: Client) -> None:
    from durable_tools import build_worker

    with pytest.raises(ValueError, match="not a model spec"):
        build_worker(
            client, ToolRegistry(), model_limits={"gpt-4.1": ModelLimits(requests_per_minute=1)}
        )
    with pytest.raises(ValueError, match="should be ModelLimits"):
        build_worker(client, ToolRegistry(), model_limits={"openai:x": 5})  # type: ignore[dict-item]


# ------------------------------------------------------------- across runs, dev server

WINDOW = 3.0
PER_WINDOW = 2
MARGIN = 1.0
"""Arrivals trail their booked starts by the update's reply and the HTTP request; checked
windows are shorter than the limiter's by this much, so that jitter cannot fail the test."""


def answer(request: RecordedRequest) -> dict[str, Any]:
    return chat_completion(content="done")


@asynccontextmanager
async def limited_worker(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    server: FakeOpenAIServer,
    limits: dict[str, ModelLimits],
    registry: ToolRegistry | None = None,
    **options: Any,
) -> AsyncIterator[None]:
    with server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        try:
            async with running_worker(
                client,
                registry or ToolRegistry(),
                task_queue,
                artifact_store=FileSystemArtifactStore(tmp_path),
                model_limits=limits,
                **options,
            ):
                yield
        finally:
            await aclose_shared_clients()
            with contextlib.suppress(Exception):
                for spec in limits:
                    await client.get_workflow_handle(limiter_id(task_queue, spec)).terminate()


async def test_runs_started_together_keep_the_requests_per_window(
    client: Client, task_queue: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = 6
    limits = ModelLimits(requests_per_minute=PER_WINDOW * 60 / WINDOW, window_seconds=WINDOW)
    server = FakeOpenAIServer(answer)
    async with limited_worker(
        client, task_queue, tmp_path, monkeypatch, server, {"openai:gpt-limited": limits}
    ):
        tools = DurableTools(client, task_queue)
        # The worker's first call imports the provider's SDK (seconds on a busy machine),
        # after its start: an unlimited run pays for that first, so arrivals show starts.
        warm = await tools.start("hi", config=AgentConfig(model="openai:gpt-warm"))
        assert (await warm.result()).status == RunStatus.COMPLETED
        config = AgentConfig(model="openai:gpt-limited")
        started = await asyncio.gather(*(tools.start("hi", config=config) for _ in range(runs)))
        results = await asyncio.gather(*(run.result() for run in started))
        for run in started:
            await assert_not_wedged(run.handle)
    assert [r.status for r in results] == [RunStatus.COMPLETED] * runs
    arrivals = sorted(r.received_at for r in server.requests if r.json["model"] == "gpt-limited")
    assert len(arrivals) == runs
    # In every window (a little shorter than the limiter's), at most PER_WINDOW arrivals.
    busiest = max(sum(1 for a in arrivals if t <= a < t + WINDOW - MARGIN) for t in arrivals)
    assert busiest == PER_WINDOW
    # And the calls are spread: the first PER_WINDOW came in the first window, no more.
    assert sum(1 for a in arrivals if a < arrivals[0] + WINDOW - MARGIN) == PER_WINDOW


async def test_a_model_without_a_free_start_falls_back_to_the_next(
    client: Client, task_queue: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One request a minute: the second run's call cannot start within half its 20 s
    attempt, so it fails as a rate limit would and the turn moves to the unlimited model."""
    limits = ModelLimits(requests_per_minute=1)
    server = FakeOpenAIServer(answer)
    config = AgentConfig(
        model=["openai:gpt-limited", "openai:gpt-spare"],
        model_max_attempts=1,
        model_timeout_seconds=20,
    )
    async with limited_worker(
        client, task_queue, tmp_path, monkeypatch, server, {"openai:gpt-limited": limits}
    ):
        tools = DurableTools(client, task_queue)
        first = await tools.start("hi", config=config)
        assert (await first.result()).status == RunStatus.COMPLETED
        second = await tools.start("hi", config=config)
        with contextlib.suppress(WorkflowFailureError):
            await second.result()
        status = await second.status()
        events = await second.events()
    assert status.status == RunStatus.COMPLETED, status
    assert [r.json["model"] for r in server.requests] == ["gpt-limited", "gpt-spare"]
    [fallback] = [e for e in events if e.event == "model.fallback"]
    assert "rate limit" in (fallback.detail or "")
    assert fallback.details["to"] == "openai:gpt-spare"


async def test_the_limiter_refuses_malformed_input_and_keeps_booking(
    client: Client, task_queue: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whoever can signal the namespace cannot fail the limiter's workflow task."""
    limits = ModelLimits(requests_per_minute=600)
    server = FakeOpenAIServer(answer)
    async with limited_worker(
        client, task_queue, tmp_path, monkeypatch, server, {"openai:gpt-limited": limits}
    ):
        tools = DurableTools(client, task_queue)
        config = AgentConfig(model="openai:gpt-limited")
        first = await tools.start("hi", config=config)
        assert (await first.result()).status == RunStatus.COMPLETED
        limiter = client.get_workflow_handle(limiter_id(task_queue, "openai:gpt-limited"))
        good = {"limits": {"requests_per_minute": 1}, "call": "x"}
        for bad in [
            None,
            "text",
            {**good, "tokens": -1},
            {**good, "tokens": 10**13},
            {**good, "max_delay": float("nan")},
            {**good, "limits": {"requests_per_minute": float("inf")}},
            {**good, "limits": {}},
            {**good, "call": "x" * 10_000},
        ]:
            with pytest.raises(WorkflowUpdateFailedError):
                await limiter.execute_update(RESERVE_UPDATE, bad)
        lease_ok = {
            "limits": {"requests_per_minute": 1},
            "tokens": [1],
            "max_delay": 1,
            "lease": "l",
        }
        for bad in [
            {**lease_ok, "tokens": []},
            {**lease_ok, "tokens": [-1]},
            {**lease_ok, "tokens": [1] * 201},
            {**lease_ok, "max_delay": float("inf")},
            {**lease_ok, "lease": ""},
            {**lease_ok, "adjust": [{"lease": "l", "start": float("nan")}]},
            {**lease_ok, "adjust": [{"lease": "l", "start": 1.0, "returned": 10**6}]},
            {**lease_ok, "adjust": [{"lease": "l", "start": 1.0}] * 1_001},
        ]:
            with pytest.raises(WorkflowUpdateFailedError):
                await limiter.execute_update(LEASE_UPDATE, bad)
        for bad in [None, {"call": "x"}, {"call": "x", "tokens": -5}, [1, 2]]:
            await limiter.signal(SETTLE_SIGNAL, bad)
        for bad in [None, {"adjust": [{"lease": "", "start": 1.0}]}, {"adjust": "x"}]:
            await limiter.signal(ADJUST_SIGNAL, bad)
        second = await tools.start("hi", config=config)
        assert (await second.result()).status == RunStatus.COMPLETED
        await assert_not_wedged(limiter, allowed=0)
    assert len(server.requests) == 2


async def taken_in(handle: WorkflowHandle[Any, Any], *, first_run: str) -> bool:
    """Wait until the run has completed a workflow task after the last signal it got (the
    signals sent are handled), or it continued as new; say whether it did.

    Signals flooded at once land in one workflow task: on a loaded machine its activation
    outlasts the SDK's 2 s deadlock detector or the task's timeout, and the limiter's
    continue-as-new is late or never comes. A flood as the tests send it is bursts of 100,
    each sent once the limiter has handled the one before. Waiting for no pending task
    would not do: under load a lease is almost always pending.
    """
    signaled = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
    completed = EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
    for _ in range(600):
        if (await handle.describe()).run_id != first_run:
            return True
        kinds = [event.event_type for event in (await handle.fetch_history()).events]
        last_signal = max((n for n, kind in enumerate(kinds) if kind == signaled), default=-1)
        if completed in kinds[last_signal + 1 :]:
            return False
        await asyncio.sleep(0.2)
    raise AssertionError("the limiter never took in its signals")


async def test_a_limiter_at_its_bound_continues_as_new_and_keeps_booking(
    client: Client, task_queue: str
) -> None:
    """A window holding more calls than the old bound of 5,000 (a busy deployment's, or
    well-formed reservations under 200-character names) carries over continue-as-new and
    the limiter keeps booking: it used to fail its workflow task for ever there."""
    spec = "openai:gpt-limited"
    limits = ModelLimits(requests_per_minute=1e9)
    now = time.time()
    full = [
        LimitedCall(start=now + n * 1e-4, call=f"{n:05d}" + "x" * 195)
        for n in range(MAX_CARRIED_ENTRIES)
    ]
    async with running_worker(client, ToolRegistry(), task_queue):
        handle = await client.start_workflow(
            LIMITER_WORKFLOW,
            LimiterInput(spec=spec, calls=full),
            id=limiter_id(task_queue, spec),
            task_queue=task_queue,
        )
        first_run = handle.first_execution_run_id
        one_more = ReserveRequest(limits=limits, max_delay=86_400, call="one more")
        assert (
            await handle.execute_update(RESERVE_UPDATE, one_more, result_type=Reservation)
        ).booked
        latest = client.get_workflow_handle(handle.id)
        # Signals, as many as a busy limiter gets, until its history asks to continue as new:
        # bursts of 100, each sent once the limiter has taken in the one before. All 3,000 at
        # once land in one workflow task, whose activation on a machine at load 14 under the
        # strict sandbox outlasted the SDK's 2 s deadlock detector (a CI failure); a burst of
        # 100 is what a busy deployment sends between two tasks.
        for _ in range(30):
            await asyncio.gather(
                *(
                    latest.signal(SETTLE_SIGNAL, {"call": f"gone {n}", "tokens": 1})
                    for n in range(100)
                )
            )
            if await taken_in(latest, first_run=first_run):
                break
        for _ in range(120):  # a continue-as-new is refused while signals keep coming
            if (await latest.describe()).run_id != first_run:
                break
            await asyncio.sleep(0.5)
        assert (await latest.describe()).run_id != first_run, "the limiter never continued as new"
        booked = await asyncio.wait_for(
            latest.execute_update(RESERVE_UPDATE, one_more, result_type=Reservation), 60
        )
        assert booked.booked
        granted = await asyncio.wait_for(
            latest.execute_update(
                LEASE_UPDATE, lease(limits, [1] * 200, name="after"), result_type=LeaseGrant
            ),
            60,
        )
        assert len(granted.starts) == 200
        for run in (client.get_workflow_handle(handle.id, run_id=first_run), latest):
            # Under a flood of signals the server closes a task and hands its commands back
            # with the new events (causes UNHANDLED_COMMAND, FORCE_CLOSE_COMMAND): that is
            # Temporal's flow control. What must never be is the limiter's code failing.
            failed = event_attributes(
                await run.fetch_history(), "workflow_task_failed_event_attributes"
            )
            raised = [f.failure.message for f in failed if f.cause == CODE_FAILED]
            assert raised == []
        await latest.terminate()


CODE_FAILED = WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE


def three_turns(request: RecordedRequest) -> dict[str, Any]:
    """Two tool calls, then the answer: three model calls a run."""
    done = sum(1 for message in request.json["messages"] if message["role"] == "tool")
    if done < 2:
        return chat_completion(tool_calls=[tool_call(f"t{done}", "lookup", '{"key": "k"}')])
    return chat_completion(content="done")


def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


async def test_a_hundred_runs_at_once_under_limits_that_never_bind_all_complete(
    client: Client, task_queue: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's load: 100 runs of three model turns started at once, with a limit that
    never binds. Each booked call used to be an update of its own: past Temporal's 10
    updates in flight a workflow, bookings failed and so did 40 of the runs."""
    runs = 100
    limits = {"openai:gpt-limited": ModelLimits(requests_per_minute=1e6)}
    registry = ToolRegistry()
    registry.register(lookup, read_only=True)
    # A listen backlog for 100 clients at once (the standard library's is 5).
    monkeypatch.setattr(fake_openai.ThreadingHTTPServer, "request_queue_size", 1024)
    server = FakeOpenAIServer(three_turns)
    async with limited_worker(
        client,
        task_queue,
        tmp_path,
        monkeypatch,
        server,
        limits,
        registry,
        max_concurrent_activities=300,
    ):
        tools = DurableTools(client, task_queue)
        # One attempt: a booking that fails would fail the run. A long heartbeat: a worker
        # process starved of CPU by a hundred sandboxed runs on a busy machine missed the
        # default 10 s, which failed runs for the machine's slowness, not a booking's.
        config = AgentConfig(
            model="openai:gpt-limited", model_max_attempts=1, model_heartbeat_seconds=120
        )
        started = await asyncio.gather(*(tools.start("hi", config=config) for _ in range(runs)))
        results = await asyncio.gather(*(run.result() for run in started), return_exceptions=True)
        # On a queue of its own: a lease never waits behind the runs' workflow tasks.
        limiter = client.get_workflow_handle(limiter_id(task_queue, "openai:gpt-limited"))
        assert (await limiter.describe()).task_queue == limiter_task_queue(task_queue)
    statuses = [getattr(r, "status", repr(r)[:200]) for r in results]
    assert statuses == [RunStatus.COMPLETED] * runs


@pytest.mark.slow
async def test_hundreds_of_runs_keep_a_binding_limit_through_a_continue_as_new(
    client: Client, task_queue: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """300 runs started at once against a limit that binds (60 calls
    per 4 s), while a flood of signals makes the limiter continue as new in the middle:
    every run completes, and no window at the fake provider holds more than the limit."""
    runs, window, per_window, margin = 300, 4.0, 60, 1.5
    spec = "openai:gpt-limited"
    limits = ModelLimits(requests_per_minute=per_window * 60 / window, window_seconds=window)
    monkeypatch.setattr(fake_openai.ThreadingHTTPServer, "request_queue_size", 1024)
    server = FakeOpenAIServer(answer)
    async with limited_worker(client, task_queue, tmp_path, monkeypatch, server, {spec: limits}):
        tools = DurableTools(client, task_queue)
        warm = await tools.start("hi", config=AgentConfig(model="openai:gpt-warm"))
        assert (await warm.result()).status == RunStatus.COMPLETED
        config = AgentConfig(model=spec)
        started = await asyncio.gather(*(tools.start("hi", config=config) for _ in range(runs)))
        limiter = client.get_workflow_handle(limiter_id(task_queue, spec))
        while len(server.requests) < runs // 3:
            await asyncio.sleep(0.2)
        middle_run = (await limiter.describe()).run_id
        for _ in range(25):  # continue-as-new in the middle of the load
            await asyncio.gather(
                *(limiter.signal(SETTLE_SIGNAL, {"call": f"x{n}", "tokens": 1}) for n in range(100))
            )
            if await taken_in(limiter, first_run=middle_run):
                break
        results = await asyncio.gather(*(run.result() for run in started), return_exceptions=True)
        latest_run = (await limiter.describe()).run_id
        chain = [e.run_id async for e in client.list_workflows(f"WorkflowId = '{limiter.id}'")]
        for run_id in chain:
            history = await client.get_workflow_handle(limiter.id, run_id=run_id).fetch_history()
            failed = event_attributes(history, "workflow_task_failed_event_attributes")
            assert [f.failure.message for f in failed if f.cause == CODE_FAILED] == []
    assert latest_run != middle_run, "the limiter did not continue as new in the middle"
    statuses = [getattr(r, "status", repr(r)[:200]) for r in results]
    assert statuses == [RunStatus.COMPLETED] * runs
    # Every request counts, retried attempts' too (a starved worker's heartbeats can time
    # an attempt out: its retry books again).
    arrivals = sorted(r.received_at for r in server.requests if r.json["model"] == "gpt-limited")
    assert len(arrivals) >= runs
    # The limit holds: never more starts in a window than it allows. (Asserting it was
    # used to the last start failed on a loaded machine, where one start of a window's
    # batch reached the server after the measured span: 59 of 60.)
    assert starts_in_busiest_window(arrivals, window - margin) <= per_window
