"""A worker process with one tool that ignores its cancellation, for the cancel tests.

    python tests/reliability/stubborn_worker.py ADDRESS TASK_QUEUE WORK_DIR

`stubborn` appends a line to WORK_DIR/runs.txt each time its body starts, then works
until WORK_DIR/release exists, whatever `ctx.cancelled` says. Prints `ready` once polling.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

from durable_tools import ToolContext, ToolRegistry, build_worker, connect


def make_registry(work: Path) -> ToolRegistry:
    registry = ToolRegistry()

    # Safe to repeat and heartbeating: Temporal itself would retry it after a lost worker.
    @registry.tool(read_only=True, local=False, heartbeat_timeout=2, start_to_close_timeout=300)
    def stubborn(ctx: ToolContext) -> str:
        """Work until released, ignoring the cancellation flag."""
        with open(work / "runs.txt", "a") as handle:
            handle.write(f"{os.getpid()}\n")
        deadline = time.monotonic() + 300
        while not (work / "release").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        return "done"

    return registry


async def main(address: str, task_queue: str, work: Path) -> None:
    client = await connect(address)
    async with build_worker(client, make_registry(work), task_queue=task_queue):
        print("ready", flush=True)
        started = time.monotonic()
        while time.monotonic() - started < 600:  # never outlive a stuck test by much
            await asyncio.sleep(1)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], Path(sys.argv[3])))
