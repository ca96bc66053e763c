"""Typed progress: visible to clients while a tool runs, absent from history and the model."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Annotated

from temporalio.client import Client

from durable_tools import (
    AgentConfig,
    AgentRun,
    DurableTools,
    ExecutionStrategy,
    Injected,
    RetrySpec,
    RunStatus,
    ToolContext,
    ToolProgress,
    ToolRegistry,
)
from durable_tools.client.runs._watch import RunWatcher
from support import answer, assert_not_wedged, calls, running_worker, write_script


async def progress_until(run: AgentRun, seqs: dict[str, int]) -> dict[str, ToolProgress]:
    """Poll `run.progress()` until each call reached its report number."""
    deadline = asyncio.get_running_loop().time() + 20
    while True:
        found = {item.call_id: item for item in await run.progress()}
        if all(c in found and found[c].progress.seq >= s for c, s in seqs.items()):
            return found
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"progress never reached {seqs}: {found}")
        await asyncio.sleep(0.1)


async def test_sync_and_async_progress_is_seen_by_clients_not_by_history_or_model(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    registry = ToolRegistry()
    async_steps = asyncio.Semaphore(0)
    sync_steps = threading.Semaphore(0)
    release_async = asyncio.Event()
    release_sync = threading.Event()

    @registry.tool(read_only=True)
    async def crawl(site: str, ctx: ToolContext) -> str:
        """Crawls, reporting each page."""
        for page in (1, 2, 3):
            await async_steps.acquire()
            ctx.progress(f"crawl page {page}", fraction=page / 3, partial={"pages": page})
        await release_async.wait()
        return "crawled"

    @registry.tool(read_only=True)
    def index(docs: int, ctx: ToolContext) -> str:
        """Indexes in a thread, reporting each document."""
        for doc in (1, 2, 3):
            assert sync_steps.acquire(timeout=30)
            ctx.progress(f"index doc {doc}", fraction=doc / 3)
        release_sync.wait(30)
        return "indexed"

    model = write_script(
        tmp_path,
        [calls(("c1", "crawl", {"site": "a"}), ("i1", "index", {"docs": 3})), answer("done")],
    )
    config = AgentConfig(model=model, strategy=ExecutionStrategy(mode="parallel"))
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("go", config=config)
        deadline = asyncio.get_running_loop().time() + 20
        while len((await run.status()).running_tools) < 2:
            assert asyncio.get_running_loop().time() < deadline, "the tools never started"
            await asyncio.sleep(0.05)
        before = len((await run.handle.fetch_history()).events)
        lines: list[str] = []
        watcher = RunWatcher(run, out=lines.append)
        for _ in range(3):
            async_steps.release()
            sync_steps.release()
        found = await progress_until(run, {"c1": 3, "i1": 3})
        await watcher.poll()
        after = len((await run.handle.fetch_history()).events)
        release_async.set()
        release_sync.set()
        result = await run.result()
        conversation = await run.conversation()
        await assert_not_wedged(run.handle)

    crawl_progress = found["c1"]
    assert crawl_progress.tool == "crawl"
    assert crawl_progress.progress.message == "crawl page 3"
    assert crawl_progress.progress.fraction == 1.0
    assert crawl_progress.progress.partial == {"pages": 3}
    # Heartbeats are throttled: the bounded stream keeps the reports sent in between.
    assert [p.message for p in crawl_progress.recent] == ["crawl page 1", "crawl page 2"]
    assert found["i1"].progress.message == "index doc 3"
    assert found["i1"].progress.fraction == 1.0
    assert after == before  # no history event per progress report
    assert any("crawl page 3" in line for line in lines)
    assert any("index doc 3" in line and "100%" in line for line in lines)
    assert result.status == RunStatus.COMPLETED
    texts = " ".join(m.content or "" for m in conversation)
    assert "crawl page" not in texts and "index doc" not in texts and "pages" not in texts


async def test_a_retried_attempt_resumes_from_what_the_last_one_reported(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    registry = ToolRegistry()
    seen: list[tuple[int, object, int | None]] = []
    fast = RetrySpec(initial_interval=0.05, maximum_interval=0.1, maximum_attempts=3)

    @registry.tool(read_only=True, retry=fast)
    def old_style(n: int, ctx: ToolContext) -> str:
        """Reports a free-form value to resume from, then fails once."""
        previous = ctx.previous_progress
        seen.append((ctx.attempt, ctx.heartbeat_details, previous.seq if previous else None))
        if ctx.attempt == 1:
            ctx.progress({"page": 7})
            raise ConnectionError("try again")
        return "resumed"

    @registry.tool(read_only=True, retry=fast)
    def typed(n: int, ctx: ToolContext) -> str:
        """Reports typed progress with explicit resume details, then fails once."""
        seen.append((ctx.attempt, ctx.heartbeat_details, None))
        if ctx.attempt == 1:
            ctx.progress("halfway", fraction=0.5, details={"offset": 50})
            raise ConnectionError("try again")
        return "resumed"

    model = write_script(
        tmp_path,
        [calls(("o", "old_style", {"n": 1})), calls(("t", "typed", {"n": 1})), answer("ok")],
    )
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("go", model=model)
        result = await run.result()
    assert result.status == RunStatus.COMPLETED
    assert seen == [
        (1, None, None),
        (2, {"page": 7}, 1),
        (1, None, None),
        (2, {"offset": 50}, None),
    ]


async def test_a_secret_in_progress_never_leaves_the_worker_not_even_to_resume_from(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    """`ctx.progress(f"calling with {key}")` gives the message as the resume value: the
    heartbeat the server keeps (and hands the next attempt) must not carry the key."""
    secret = "sk-progress-9f8e7d6c5b4a39281706"
    registry = ToolRegistry()
    resumed: list[object] = []
    fast = RetrySpec(initial_interval=0.05, maximum_interval=0.1, maximum_attempts=3)

    @registry.tool(read_only=True, retry=fast)
    def call_api(
        path: str, ctx: ToolContext, key: Annotated[str, Injected("api_key", secret=True)]
    ) -> str:
        """Calls an API, reporting the URL it calls."""
        if ctx.attempt == 1:
            ctx.progress(f"calling https://api.example/{path}?key={key}")
            ctx.progress({"free_form": key})  # a free-form resume value, too
            raise ConnectionError("try again")
        resumed.append(ctx.heartbeat_details)
        return "ok"

    model = write_script(tmp_path, [calls(("c1", "call_api", {"path": "x"})), answer("ok")])
    async with running_worker(client, registry, task_queue, secrets={"api_key": secret}):
        run = await DurableTools(client, task_queue).start("go", model=model)
        result = await run.result()
        history = (await run.handle.fetch_history()).to_json()
    assert result.status == RunStatus.COMPLETED
    assert resumed and secret not in repr(resumed)
    assert secret not in history
