"""What every benchmark shares: the server, the workload, the workers and the timers."""

from __future__ import annotations

import json
import os
import platform
import socket
import statistics
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker

from bench.bare_workflow import BareAgentInput, BareAgentWorkflow, bare_activities
from durable_tools import (
    AgentConfig,
    DurableTools,
    Limits,
    RunStatus,
    ToolRegistry,
    build_worker,
    connect,
)
from durable_tools.server import DevServer
from durable_tools.tools import FileSystemArtifactStore

__all__ = [
    "Bench",
    "free_port",
    "lookup",
    "machine",
    "median",
    "server_client",
]

TOOL = "lookup"
BLOB = "blob"


def lookup(key: str) -> str:
    """The trivial read-only tool of the latency benchmarks."""
    return f"value of {key}"


def blob(size: int) -> str:
    """A tool returning `size` bytes of text (for the history footprint)."""
    return ("0123456789abcdef" * (size // 16 + 1))[:size]


def make_registry(*, local: bool = False) -> ToolRegistry:
    # `local` is always explicit: the main variant measures regular activities, whatever
    # the registry would choose by itself for a read-only tool (see tools/_auto_local.py).
    registry = ToolRegistry()
    registry.register(lookup, read_only=True, local=local, description="Look a key up.")
    registry.register(blob, read_only=True, local=False, description="Return size bytes of text.")
    return registry


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def machine() -> dict[str, Any]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpus": os.cpu_count(),
        "cpu_model": model,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


@asynccontextmanager
async def server_client(address: str | None, data_dir: Path) -> AsyncIterator[tuple[Client, str]]:
    """A client on `address`, or on a dev server of our own (tuned as the project tunes it)."""
    if address:
        yield await connect(address), address
        return
    server = DevServer(data_dir / "server", port=free_port(), headless=True)
    client = await server.start()
    try:
        yield client, server.address
    finally:
        await server.stop()


def tool_steps(calls: int, *, tool: str = TOOL, size: int = 0, per_turn: int = 1) -> list[Any]:
    """A script of `calls` tool calls, `per_turn` a turn, then a final answer."""
    steps: list[Any] = []
    for turn in range(0, calls, per_turn):
        batch = []
        for i in range(turn, min(turn + per_turn, calls)):
            arguments = {"size": size} if tool == BLOB else {"key": f"k{i}"}
            batch.append({"id": f"c{i}", "name": tool, "arguments": arguments})
        steps.append({"tool_calls": batch})
    steps.append({"text": f"done after {calls} calls"})
    return steps


@dataclass
class Bench:
    """One client, and workers for durable-tools (regular and local tools) and the bare loop."""

    client: Client
    work_dir: Path
    durable_queue: str = ""
    local_queue: str = ""
    bare_queue: str = ""

    def script(self, steps: list[Any]) -> str:
        path = self.work_dir / f"script-{uuid.uuid4().hex[:8]}.json"
        path.write_text(json.dumps({"steps": steps}))
        return str(path)

    @asynccontextmanager
    async def workers(self, **options: Any) -> AsyncIterator[Bench]:
        suffix = uuid.uuid4().hex[:8]
        self.durable_queue = f"bench-durable-{suffix}"
        self.local_queue = f"bench-local-{suffix}"
        self.bare_queue = f"bench-bare-{suffix}"
        store = FileSystemArtifactStore(self.work_dir / "artifacts")
        async with AsyncExitStack() as stack:
            for queue, local in ((self.durable_queue, False), (self.local_queue, True)):
                worker = build_worker(
                    self.client,
                    make_registry(local=local),
                    task_queue=queue,
                    artifact_store=store,
                    **options,
                )
                await stack.enter_async_context(worker)
            bare = Worker(
                self.client,
                task_queue=self.bare_queue,
                workflows=[BareAgentWorkflow],
                activities=bare_activities({TOOL: lookup, BLOB: blob}),
                **options,
            )
            await stack.enter_async_context(bare)
            yield self

    def config(self, script_path: str, calls: int, *, summaries: bool = True) -> AgentConfig:
        return AgentConfig(
            model=f"scripted:{script_path}",
            limits=Limits(max_turns=calls + 2, max_tool_calls=calls + 1),
            activity_summaries=summaries,
        )

    async def start_durable(
        self, script_path: str, calls: int, *, local: bool = False, summaries: bool = True
    ) -> Any:
        queue = self.local_queue if local else self.durable_queue
        dt = DurableTools(self.client, queue)
        config = self.config(script_path, calls, summaries=summaries)
        return await dt.start("benchmark", config=config)

    async def run_durable(
        self, script_path: str, calls: int, *, local: bool = False, summaries: bool = True
    ) -> Any:
        run = await self.start_durable(script_path, calls, local=local, summaries=summaries)
        result = await run.result()
        if result.status != RunStatus.COMPLETED or result.tool_calls != calls:
            raise RuntimeError(f"durable-tools run {run.run_id} ended badly: {result}")
        return run.handle

    async def start_bare(self, script_path: str, calls: int) -> Any:
        return await self.client.start_workflow(
            BareAgentWorkflow.run,
            BareAgentInput(model=f"scripted:{script_path}", prompt="benchmark"),
            id=f"bare-{uuid.uuid4().hex[:12]}",
            task_queue=self.bare_queue,
        )

    async def run_bare(self, script_path: str, calls: int) -> Any:
        handle = await self.start_bare(script_path, calls)
        answer = await handle.result()
        if answer != f"done after {calls} calls":
            raise RuntimeError(f"bare run {handle.id} ended badly: {answer!r}")
        return handle


async def timed(fn: Callable[[], Any]) -> float:
    """Seconds `await fn()` took."""
    started = time.perf_counter()
    await fn()
    return time.perf_counter() - started
