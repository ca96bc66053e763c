"""`python -m bench.limiter [--runs 200] [--calls 1000] [--address HOST:PORT]`.

Per-model rate limits at load (docs/models.md, "Rate limits"). Against one dev server, in
one process, measured side by side:

- `--runs` runs started at once, each three model turns (two tool calls, then the
  answer), on a worker whose `ModelLimits` never bind (a million requests a minute) and on
  the same worker without limits, in the order without, with, with, without (so that a
  shared machine's drift cancels out): the seconds until every run completed, and their
  ratio against the target of 1.2x;
- `--calls` model calls in flight at once (as many runs of one turn, the model answering
  after `--think` seconds), limited by limits that never bind: completed, failed, and
  stalled (not done after `--deadline` seconds), and the most in flight at once;
- the limiter's history events per limited call (every run of its chain).

Prints a table, then the figures as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

from temporalio.client import Client

from bench._common import machine, server_client
from bench._logs import core_logs_to_stderr, expected_core_logs
from durable_tools.client import DurableTools
from durable_tools.messages import Message, ModelRequest, ModelResponse, ToolCall, Usage
from durable_tools.models import register_model_adapter, unregister_model_adapter
from durable_tools.protocol._limiter import limiter_id
from durable_tools.tools import FileSystemArtifactStore, ToolRegistry
from durable_tools.worker import ModelLimits, build_worker
from durable_tools.workflows import AgentConfig, Limits, RunStatus

__all__ = ["measure"]

PREFIX = "bench-limit"
TARGET_RATIO = 1.2
NEVER_BINDS = ModelLimits(requests_per_minute=1e6)


class TurnsModel:
    """Calls the `lookup` tool until the run has `turns - 1` results, then answers, after
    `think` seconds a call; counts calls and the most in flight at once."""

    def __init__(self, turns: int, think: float) -> None:
        self.turns = turns
        self.think = think
        self.calls = 0
        self.in_flight = 0
        self.most_in_flight = 0

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if self.think:
                await asyncio.sleep(self.think)
        finally:
            self.in_flight -= 1
        done = sum(1 for message in request.messages if message.role == "tool")
        if done < self.turns - 1:
            call = ToolCall(id=f"t{done}", name="lookup", arguments='{"key": "k"}')
            message = Message(role="assistant", tool_calls=[call])
        else:
            message = Message(role="assistant", content="done")
        return ModelResponse(message=message, usage=Usage(input_tokens=20, output_tokens=5))


def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


@asynccontextmanager
async def workers(
    client: Client, work_dir: Path, queues: dict[str, ModelLimits | None], **options: Any
) -> AsyncIterator[None]:
    """One worker per queue, limited as given (None: no limits)."""
    registry = ToolRegistry()
    registry.register(lookup, read_only=True, local=False)
    store = FileSystemArtifactStore(work_dir / "artifacts")
    async with AsyncExitStack() as stack:
        for queue, limits in queues.items():
            model_limits = {f"{PREFIX}:{queue}": limits} if limits is not None else None
            worker = build_worker(
                client,
                registry,
                task_queue=queue,
                artifact_store=store,
                model_limits=model_limits,
                **options,
            )
            await stack.enter_async_context(worker)
        yield


async def start_all(client: Client, queue: str, runs: int, turns: int) -> list[Any]:
    tools = DurableTools(client, queue)
    config = AgentConfig(
        model=f"{PREFIX}:{queue}", limits=Limits(max_turns=turns + 1, max_tool_calls=turns)
    )
    gate = asyncio.Semaphore(100)  # starts are not what is measured

    async def start() -> Any:
        async with gate:
            return await tools.start("bench", config=config)

    return list(await asyncio.gather(*(start() for _ in range(runs))))


async def run_all(client: Client, queue: str, runs: int, turns: int) -> float:
    """Seconds from starting `runs` runs at once until all completed."""
    started = time.perf_counter()
    handles = await start_all(client, queue, runs, turns)
    results = await asyncio.gather(*(run.result() for run in handles))
    seconds = time.perf_counter() - started
    bad = [r for r in results if r.status != RunStatus.COMPLETED]
    if bad:
        raise RuntimeError(f"{len(bad)} of {runs} runs on {queue} ended badly: {bad[0]}")
    return seconds


async def limiter_events(client: Client, queue: str) -> int:
    """History events of every run of the limiter chain of `queue`'s model."""
    workflow_id = limiter_id(queue, f"{PREFIX}:{queue}")
    total = 0
    async for execution in client.list_workflows(f"WorkflowId = '{workflow_id}'"):
        handle = client.get_workflow_handle(workflow_id, run_id=execution.run_id)
        total += len((await handle.fetch_history()).events)
    return total


async def measure(
    client: Client, work_dir: Path, *, runs: int, calls: int, think: float, deadline: float
) -> dict[str, Any]:
    """The figures of the module docstring."""
    suffix = uuid.uuid4().hex[:8]
    plain, limited, many = f"plain-{suffix}", f"limited-{suffix}", f"many-{suffix}"
    models = {plain: TurnsModel(3, 0.0), limited: TurnsModel(3, 0.0), many: TurnsModel(1, think)}
    register_model_adapter(PREFIX, lambda rest: models[rest], replace=True)
    try:
        async with workers(
            client,
            work_dir,
            {plain: None, limited: NEVER_BINDS, many: NEVER_BINDS},
            max_concurrent_activities=calls + 100,
        ):
            seconds: dict[str, float] = {plain: 0.0, limited: 0.0}
            for queue in (plain, limited, limited, plain):
                seconds[queue] += await run_all(client, queue, runs, 3)

            handles = await start_all(client, many, calls, 1)
            waits = [asyncio.ensure_future(run.result()) for run in handles]
            done, pending = await asyncio.wait(waits, timeout=deadline)
            for wait in pending:
                wait.cancel()
            completed = sum(
                1
                for wait in done
                if wait.exception() is None and wait.result().status == RunStatus.COMPLETED
            )
            events = await limiter_events(client, limited) + await limiter_events(client, many)
            for queue in (limited, many):
                await client.get_workflow_handle(limiter_id(queue, f"{PREFIX}:{queue}")).terminate()
    finally:
        unregister_model_adapter(PREFIX)
    ratio = seconds[limited] / seconds[plain]
    limited_calls = models[limited].calls + models[many].calls
    return {
        "runs_at_once": {
            "runs": runs,
            "model_turns_per_run": 3,
            "seconds_without_limits": seconds[plain] / 2,
            "seconds_with_limits_that_never_bind": seconds[limited] / 2,
            "ratio": ratio,
            "target": TARGET_RATIO,
            "verdict": "ok" if ratio <= TARGET_RATIO else "MISSED",
        },
        "calls_at_once": {
            "calls": calls,
            "think_seconds": think,
            "most_in_flight": models[many].most_in_flight,
            "completed": completed,
            "failed": len(done) - completed,
            "stalled": len(pending),
            "verdict": "ok" if completed == calls else "MISSED",
        },
        "limiter_history_events_per_call": events / max(limited_calls, 1),
        "limited_calls": limited_calls,
        "machine": machine(),
    }


def table(figures: dict[str, Any]) -> str:
    at_once, many = figures["runs_at_once"], figures["calls_at_once"]
    return "\n".join(
        [
            f"{at_once['runs']} runs x 3 model turns at once: "
            f"{at_once['seconds_without_limits']:.1f} s without limits, "
            f"{at_once['seconds_with_limits_that_never_bind']:.1f} s with limits that never "
            f"bind: {at_once['ratio']:.2f}x (target <= {TARGET_RATIO}x) {at_once['verdict']}",
            f"{many['calls']} model calls at once ({many['most_in_flight']} in flight at most): "
            f"{many['completed']} completed, {many['failed']} failed, {many['stalled']} "
            f"stalled {many['verdict']}",
            f"limiter history events per limited call: "
            f"{figures['limiter_history_events_per_call']:.2f} "
            f"({figures['limited_calls']} calls)",
        ]
    )


async def _main(args: argparse.Namespace) -> dict[str, Any]:
    core_logs_to_stderr()  # before the first client: the core's runtime is set once
    # Workers hand unused slots back by a signal that may still be retrying when the
    # benchmark's own server stops: counted in one line, not a screen of warnings.
    with (
        tempfile.TemporaryDirectory() as work,
        expected_core_logs("tcp connect error", why="from signals retried as the server stopped"),
    ):
        async with server_client(args.address, Path(work)) as (client, _):
            return await measure(
                client,
                Path(work),
                runs=args.runs,
                calls=args.calls,
                think=args.think,
                deadline=args.deadline,
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200, help="runs started at once")
    parser.add_argument("--calls", type=int, default=1000, help="model calls in flight at once")
    parser.add_argument("--think", type=float, default=30.0, help="seconds a model call takes")
    parser.add_argument("--deadline", type=float, default=600.0, help="stalled after (s)")
    parser.add_argument("--address", help="an existing server (default: a dev server of our own)")
    results = asyncio.run(_main(parser.parse_args()))
    print(table(results))
    print(json.dumps(results, indent=2))
