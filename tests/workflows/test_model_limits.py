"""Per-model rate limits: the limiter's booking rules, then runs on the dev server whose
model calls reach a fake provider on 127.0.0.1 no faster than the worker's `ModelLimits`."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowFailureError, WorkflowUpdateFailedError

from durable_tools import AgentConfig, DurableTools, RunStatus, ToolRegistry
from durable_tools.models import aclose_shared_clients
from durable_tools.protocol._models import (
    MAX_LIMITED_CALLS,
    RESERVE_UPDATE,
    SETTLE_SIGNAL,
    LimitedCall,
    ReserveRequest,
    SettleRequest,
    book,
    limiter_id,
    settle,
)
from durable_tools.tools import FileSystemArtifactStore
from durable_tools.worker import ModelLimits
from fake_openai import FakeOpenAIServer, RecordedRequest, chat_completion
from support import assert_not_wedged, running_worker

# ----------------------------------------------------------------- booking rules (pure)


def ask(limits: ModelLimits, tokens: int = 0, max_delay: float = 1e4, call: str = "") -> Any:
    return ReserveRequest(limits=limits, tokens=tokens, max_delay=max_delay, call=call)


def test_requests_per_window_hold_in_every_window() -> None:
    limits = ModelLimits(requests_per_minute=120, window_seconds=1.0)  # 2 a second
    calls: list[LimitedCall] = []
    starts = []
    for now in [0.0] * 5 + [0.5] * 3:
        reservation = book(calls, now, ask(limits))
        assert reservation.booked
        starts.append(now + reservation.delay)
    assert starts == [0.0, 0.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0]
    # Any half-open window of one second holds at most two starts.
    for start in starts:
        assert sum(1 for s in starts if start <= s < start + 1.0) <= 2


def test_tokens_per_window_count_estimates_until_settled() -> None:
    limits = ModelLimits(tokens_per_minute=6_000, window_seconds=1.0)  # 100 a second
    calls: list[LimitedCall] = []
    assert book(calls, 0.0, ask(limits, 60, call="a")).delay == 0.0
    # 60 + 60 > 100: by its estimate, the first leaves no room in its window.
    assert book(list(calls), 0.0, ask(limits, 60, call="b")).delay == 1.0
    # It turned out to cost 10: 10 + 60 fits.
    settle(calls, SettleRequest(call="a", tokens=10))
    assert book(calls, 0.0, ask(limits, 60, call="b")).delay == 0.0
    # 10 + 60 + 40 > 100: the third waits until the first is out of the window.
    assert book(calls, 0.5, ask(limits, 40, call="c")).delay == 0.5
    # A call larger than a whole window waits for a window with nothing else in it: the
    # third starts at 1.0, so this one at 2.0; the first two no longer count at all.
    assert book(calls, 1.0, ask(limits, 500, call="d")).delay == 1.0
    settle(calls, SettleRequest(call="gone", tokens=1))  # unknown: nothing changes
    assert [(c.call, c.start, c.tokens) for c in calls] == [("c", 1.0, 40), ("d", 2.0, 500)]


def test_a_start_past_max_delay_is_not_booked() -> None:
    limits = ModelLimits(requests_per_minute=1)
    calls: list[LimitedCall] = []
    assert book(calls, 0.0, ask(limits, max_delay=10)).booked
    refused = book(calls, 5.0, ask(limits, max_delay=10))
    assert (refused.booked, refused.delay) == (False, 55.0)
    assert len(calls) == 1  # nothing booked for it


def test_the_window_is_bounded() -> None:
    limits = ModelLimits(tokens_per_minute=10**9)
    calls: list[LimitedCall] = []
    for _ in range(MAX_LIMITED_CALLS):
        assert book(calls, 0.0, ask(limits, 1)).delay == 0.0
    assert book(calls, 0.0, ask(limits, 1)).delay == 60.0
    assert len(calls) == MAX_LIMITED_CALLS + 1
    book(calls, 60.0, ask(limits, 1))  # the first window's calls are dropped
    assert len(calls) == 2


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
) -> AsyncIterator[None]:
    with server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        try:
            async with running_worker(
                client,
                ToolRegistry(),
                task_queue,
                artifact_store=FileSystemArtifactStore(tmp_path),
                model_limits=limits,
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
        config = AgentConfig(model="openai:gpt-limited")
        started = await asyncio.gather(*(tools.start("hi", config=config) for _ in range(runs)))
        results = await asyncio.gather(*(run.result() for run in started))
        for run in started:
            await assert_not_wedged(run.handle)
    assert [r.status for r in results] == [RunStatus.COMPLETED] * runs
    arrivals = sorted(r.received_at for r in server.requests)
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
        for bad in [None, {"call": "x"}, {"call": "x", "tokens": -5}, [1, 2]]:
            await limiter.signal(SETTLE_SIGNAL, bad)
        second = await tools.start("hi", config=config)
        assert (await second.result()).status == RunStatus.COMPLETED
        await assert_not_wedged(limiter, allowed=0)
    assert len(server.requests) == 2
