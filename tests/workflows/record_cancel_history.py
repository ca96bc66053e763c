"""Record the cancel histories for test_replay.py: a run cancelled while its tool ran.

- `cancel_waited.json` (recorded with the code before the grace period, kept as it was):
  the tool ignores the cancel for a while, then returns; the run waited for it.
- `cancel_outcome_unknown.json`: the tool ignores the cancel past the grace period; the
  run records the call's outcome as unknown and ends without it.

Re-record only for compatible changes, as with record_histories.py:

    .venv/bin/python tests/workflows/record_cancel_history.py [cancel_waited|cancel_outcome_unknown]
"""

from __future__ import annotations

import asyncio
import sys
import threading
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from record_histories import recording_env, save

from durable_tools import AgentConfig, DurableTools, ToolContext, ToolRegistry
from support import answer, calls, running_worker, write_script

IGNORED_FOR = {"cancel_waited": 2.0, "cancel_outcome_unknown": 8.0}
"""How long the tool ignores the cancel: under, then over, the 5 s grace period."""


async def record(name: str) -> None:
    started, release = threading.Event(), threading.Event()
    tools = ToolRegistry()

    @tools.tool(read_only=True, local=False, start_to_close_timeout=60)
    def stubborn(ctx: ToolContext) -> str:
        """Work on, whatever the cancellation flag says."""
        started.set()
        release.wait(60)
        return "done after all"

    async with recording_env() as (client, directory):
        script = [calls(("s1", "stubborn", {})), answer("never")]
        config = AgentConfig(model=write_script(directory, script))
        task_queue = f"record-{uuid.uuid4()}"
        async with running_worker(client, tools, task_queue):
            run = await DurableTools(client, task_queue).start("work", config=config, run_id=name)
            await asyncio.to_thread(started.wait, 30)
            await run.cancel("operator stopped it")
            await asyncio.sleep(IGNORED_FOR[name])
            release.set()
            await run.result()
            save(name, await run.handle.fetch_history())


if __name__ == "__main__":
    for wanted in sys.argv[1:] or list(IGNORED_FOR):
        asyncio.run(record(wanted))
