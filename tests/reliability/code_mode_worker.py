"""A worker process for the code-mode crash test (tests/reliability/test_code_mode_crash.py).

    python tests/reliability/code_mode_worker.py ADDRESS TASK_QUEUE WORK_DIR

Every tool appends what it saw (idempotency key, attempt, pid) to `WORK_DIR/calls.jsonl`;
`slow` applies its effect once per key (`WORK_DIR/effects/`). Scripts' state goes to the
artifact store under WORK_DIR, shared by every worker process of the test. Prints `ready`.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import sys
from pathlib import Path

from worker_proc import append_line, serve

from durable_tools import ToolContext, ToolRegistry


def make_registry(work: Path) -> ToolRegistry:
    registry = ToolRegistry()
    effects = work / "effects"
    effects.mkdir(parents=True, exist_ok=True)

    def seen(tool: str, ctx: ToolContext) -> None:
        record = {"tool": tool, "key": ctx.idempotency_key, "attempt": ctx.attempt}
        append_line(work / "calls.jsonl", {**record, "pid": os.getpid()})

    @registry.tool(read_only=True)
    def count(n: int, ctx: ToolContext) -> int:
        """Return n."""
        seen("count", ctx)
        return n

    @registry.tool(approval=True, idempotent=True)
    def refund(amount: int, ctx: ToolContext) -> str:
        """Refund an amount (a person approves)."""
        seen("refund", ctx)
        return f"refunded {amount}"

    @registry.tool(idempotent=True, heartbeat_timeout=2.0, start_to_close_timeout=120)
    async def slow(n: int, ctx: ToolContext) -> int:
        """Work for two seconds, then apply an effect once per idempotency key."""
        seen("slow", ctx)
        for step in range(8):
            await asyncio.sleep(0.25)
            ctx.progress({"step": step})
        target = effects / hashlib.sha256(ctx.idempotency_key.encode()).hexdigest()
        try:
            with open(target, "x") as handle:
                handle.write(ctx.idempotency_key)
        except FileExistsError:
            pass
        return n

    return registry


async def main(address: str, task_queue: str, work: Path) -> None:
    await serve(address, task_queue, work, make_registry(work))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], Path(sys.argv[3])))
