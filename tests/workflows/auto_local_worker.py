"""A worker process whose one tool runs as a local activity by default (test_auto_local.py).

    python tests/workflows/auto_local_worker.py ADDRESS TASK_QUEUE WORK_DIR

`slow_read` appends `{"pid": ...}` to WORK_DIR/attempts.jsonl as it starts, then takes a
few seconds, so the test can kill the worker while it runs. Prints `ready` once polling.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

from durable_tools import ToolRegistry, build_worker, connect

TOOL_SECONDS = 3.0


def make_registry(work: Path) -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(read_only=True, start_to_close_timeout=8)  # local by default
    async def slow_read(key: str) -> str:
        """Read a value, slowly."""
        with open(work / "attempts.jsonl", "a") as handle:
            handle.write(json.dumps({"pid": os.getpid()}) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        await asyncio.sleep(TOOL_SECONDS)
        return f"value of {key}"

    return registry


async def main(address: str, task_queue: str, work: Path) -> None:
    client = await connect(address)
    registry = make_registry(work)
    assert registry.get("slow_read").spec.policy.local is True
    async with build_worker(client, registry, task_queue=task_queue):
        print("ready", flush=True)
        started = time.monotonic()
        while time.monotonic() - started < 600:  # never outlive a stuck test by much
            await asyncio.sleep(1)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], Path(sys.argv[3])))
