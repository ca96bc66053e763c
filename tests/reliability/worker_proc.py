"""A durable-tools worker in its own process, for the crash and scale-out tests.

    python tests/reliability/worker_proc.py ADDRESS TASK_QUEUE WORK_DIR

Tools write what they see under WORK_DIR, which the test reads:

- `attempts.jsonl`: one line per attempt of `long_step` or `long_step_sync` (its twin as a
  plain function: idempotency key, attempt, the heartbeat details it started from, pid),
  and `progress.jsonl` for each step it reports.
- `effects/<sha256 of the key>`: the side effect of `long_step`, created only if absent;
  `applied.jsonl` gets a line only when this attempt created it.
- `pids.jsonl`: which process ran each `whoami` call.

The secret `api_key` comes from `DURABLE_TOOLS_SECRET_API_KEY`. Logs go to stderr at
DEBUG, so a test can check that no secret reaches them. Prints `ready` once polling.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Annotated, Any

from durable_tools import (
    Injected,
    ToolContext,
    ToolExecutionError,
    ToolRegistry,
    build_worker,
    connect,
)
from durable_tools.tools import FileSystemArtifactStore
from durable_tools.worker import secrets_from_env

STEP_SECONDS = 0.25


def append_line(path: Path, record: dict[str, Any]) -> None:
    # One write of one line, with O_APPEND: lines of concurrent writers never interleave.
    with open(path, "a") as handle:
        handle.write(json.dumps(record) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def make_registry(work: Path) -> ToolRegistry:
    registry = ToolRegistry()
    effects = work / "effects"
    effects.mkdir(parents=True, exist_ok=True)

    def begin(ctx: ToolContext) -> int:
        details = ctx.heartbeat_details
        append_line(
            work / "attempts.jsonl",
            {
                "key": ctx.idempotency_key,
                "attempt": ctx.attempt,
                "heartbeat_details": details,
                "pid": os.getpid(),
            },
        )
        return details["step"] + 1 if isinstance(details, dict) else 0

    def step_done(ctx: ToolContext, step: int) -> None:
        ctx.progress({"step": step})
        append_line(work / "progress.jsonl", {"step": step, "pid": os.getpid()})

    def apply_once(ctx: ToolContext, steps: int, start: int) -> str:
        target = effects / hashlib.sha256(ctx.idempotency_key.encode()).hexdigest()
        try:
            with open(target, "x") as handle:  # create-if-absent: the effect happens once
                handle.write(ctx.idempotency_key)
        except FileExistsError:
            return f"already applied for {ctx.idempotency_key}"
        append_line(work / "applied.jsonl", {"key": ctx.idempotency_key, "pid": os.getpid()})
        return f"applied after {steps} steps (resumed at {start})"

    @registry.tool(idempotent=True, heartbeat_timeout=2.0, start_to_close_timeout=120)
    async def long_step(steps: int, ctx: ToolContext) -> str:
        """A long job that reports progress, resumes from it, and applies its effect once."""
        start = begin(ctx)
        for step in range(start, steps):
            await asyncio.sleep(STEP_SECONDS)
            step_done(ctx, step)
        return apply_once(ctx, steps, start)

    @registry.tool(idempotent=True, heartbeat_timeout=2.0, start_to_close_timeout=120)
    def long_step_sync(steps: int, ctx: ToolContext) -> str:
        """`long_step` as a plain function: it runs in a thread and heartbeats from there."""
        start = begin(ctx)
        for step in range(start, steps):
            time.sleep(STEP_SECONDS)
            step_done(ctx, step)
        return apply_once(ctx, steps, start)

    @registry.tool(read_only=True)
    async def whoami(n: int) -> str:
        """Say which worker process ran this call."""
        await asyncio.sleep(0.05)
        append_line(work / "pids.jsonl", {"n": n, "pid": os.getpid()})
        return f"pid {os.getpid()}"

    @registry.tool(read_only=True)
    def call_api(path: str, api_key: Annotated[str, Injected("api_key", secret=True)]) -> str:
        """Call an API with the worker's key; `/fail` fails with the key in the message."""
        if path == "/fail":
            raise ToolExecutionError(f"upstream rejected key {api_key}", retryable=False)
        return f"GET {path} ok"

    return registry


async def serve(
    address: str, task_queue: str, work: Path, registry: ToolRegistry, **options: Any
) -> None:
    """Run a worker for `registry` (artifacts under WORK_DIR), print `ready`, and poll
    until the test kills this process (or ten minutes pass)."""
    client = await connect(address)
    worker = build_worker(
        client,
        registry,
        task_queue=task_queue,
        artifact_store=FileSystemArtifactStore(work / "artifacts"),
        **options,
    )
    async with worker:
        print("ready", flush=True)
        started = time.monotonic()
        while time.monotonic() - started < 600:  # never outlive a stuck test by much
            await asyncio.sleep(1)


async def main(address: str, task_queue: str, work: Path) -> None:
    logging.basicConfig(
        stream=sys.stderr, level=logging.DEBUG, format="%(asctime)s %(name)s %(message)s"
    )
    await serve(address, task_queue, work, make_registry(work), secrets=secrets_from_env())


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], Path(sys.argv[3])))
