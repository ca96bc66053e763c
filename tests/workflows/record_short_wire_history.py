"""Record a run as `DurableTools.start` starts it now, for test_replay.py.

`histories/short_wire.json` was recorded at input revision 1 (every payload in the short
wire form, no `packed-catalog` patch marker, no `TemporalChangeVersion` upsert, no first
"running" upsert: the start event holds the status attributes; then status upserts for an
approval pause, its resume and the end). `histories/local_catalog.json` was recorded at
revision 2, which adds the catalog as a local activity. test_replay.py replays both, so
later changes keep runs started either way deterministic. Re-record only for compatible
changes; the argument names the file (the client's current revision is used):

    .venv/bin/python tests/workflows/record_short_wire_history.py local_catalog
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from record_histories import recording_env, registry, save

from durable_tools import AgentConfig, DurableTools
from support import answer, calls, running_worker, wait_for, write_script


async def main(name: str) -> None:
    async with recording_env() as (client, directory):
        script = [
            calls(("l1", "lookup", {"key": "k"})),
            calls(("t1", "transfer", {"amount": 5, "note": "rent"})),
            answer("done"),
        ]
        config = AgentConfig(model=write_script(directory, script))
        task_queue = f"record-{uuid.uuid4()}"
        async with running_worker(client, registry(), task_queue):
            dt = DurableTools(client, task_queue)
            run = await dt.start("pay", config=config, run_id=name)
            await wait_for(run, lambda s: bool(s.pending_approvals))
            await run.approve("t1", decider="alice")
            await run.result()
            save(name, await run.handle.fetch_history())


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "local_catalog"))
