"""A durable-tools worker in its own process, for measuring its memory.

    python -m bench.paused_worker ADDRESS TASK_QUEUE MAX_CACHED ARTIFACT_DIR

Prints `ready` once polling. Each line read on stdin makes it collect garbage and print
its resident set size in kB (VmRSS of /proc/self/status); end of input stops it.

Stdout carries only that protocol. The SDK core writes its own log lines to stdout by
default, and the bench reads this pipe only when it asks for a figure: under load the core's
warnings (slow workflow tasks, completions of timed-out tasks) filled the 64 KiB pipe, the
core thread that logs blocked in write(2), and the worker stopped polling for good. Core
logs are forwarded to Python logging on stderr instead.
"""

from __future__ import annotations

import asyncio
import gc
import sys
from pathlib import Path

from bench._logs import core_logs_to_stderr
from durable_tools import ToolRegistry, build_worker, connect
from durable_tools.tools import FileSystemArtifactStore


def rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


def registry() -> ToolRegistry:
    tools = ToolRegistry()

    @tools.tool(approval=True)
    def transfer(amount: int) -> str:
        """Move money (needs a person's approval)."""
        return f"moved {amount}"

    return tools


async def main(address: str, task_queue: str, max_cached: int, artifacts: str) -> None:
    core_logs_to_stderr()
    client = await connect(address)
    worker = build_worker(
        client,
        registry(),
        task_queue=task_queue,
        artifact_store=FileSystemArtifactStore(artifacts),
        max_cached_workflows=max_cached,
        # The SDK's 100 would start up to 100 model calls at once on this one event loop:
        # on a loaded 2-core machine some then went 10 s without a heartbeat
        # (`model_heartbeat_seconds`) five times over and their runs failed.
        max_concurrent_activities=20,
    )
    loop = asyncio.get_running_loop()
    async with worker:
        print("ready", flush=True)
        while True:
            line = await loop.run_in_executor(None, sys.stdin.readline)
            if not line:
                break
            gc.collect()
            print(rss_kb(), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]))
