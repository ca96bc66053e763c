"""A worker process running a Pydantic AI agent on durable-tools' runtime, for the crash
test (test_framework_crash.py).

    python tests/integrations/framework_worker.py ADDRESS TASK_QUEUE WORK_DIR

The `pay` tool appends one line per payment to `WORK_DIR/effects.jsonl`. Prints `ready`
once polling; polls until killed (or ten minutes pass).
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from crash_hosts import CrashPayerWorkflow, crash_payer, effect_registry
from pydantic_ai.durable_exec.temporal import AgentPlugin, PydanticAIPlugin

from durable_tools import build_worker, connect


async def main(address: str, task_queue: str, work: Path) -> None:
    client = await connect(address, plugins=[PydanticAIPlugin()])
    worker = build_worker(
        client,
        effect_registry(work),
        task_queue=task_queue,
        workflows=[CrashPayerWorkflow],
        plugins=[AgentPlugin(crash_payer)],
    )
    async with worker:
        print("ready", flush=True)
        started = time.monotonic()
        while time.monotonic() - started < 600:  # never outlive a stuck test by much
            await asyncio.sleep(1)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], Path(sys.argv[3])))
