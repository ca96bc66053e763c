"""Record `histories/short_wire.json`: a run as `DurableTools.start` starts it now.

Its input carries `revision` 1 and every payload is in the short wire form (defaults left
out): no `packed-catalog` patch marker, no `TemporalChangeVersion` upsert, no first
"running" upsert (the start event holds the status attributes), then status upserts for
an approval pause, its resume and the end. test_replay.py replays it, so later changes
keep runs started this way deterministic. Re-record only for compatible changes:

    .venv/bin/python tests/workflows/record_short_wire_history.py
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import uuid
from pathlib import Path

from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from record_histories import HISTORIES, registry

from durable_tools.client import DurableTools
from durable_tools.search_attributes import SEARCH_ATTRIBUTES
from durable_tools.server import find_temporal_cli
from durable_tools.workflows import AgentConfig
from support import answer, calls, running_worker, wait_for, write_script


async def main() -> None:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=find_temporal_cli(),
        data_converter=pydantic_data_converter,
        search_attributes=list(SEARCH_ATTRIBUTES),
    )
    try:
        with tempfile.TemporaryDirectory() as tmp:
            script = [
                calls(("l1", "lookup", {"key": "k"})),
                calls(("t1", "transfer", {"amount": 5, "note": "rent"})),
                answer("done"),
            ]
            config = AgentConfig(model=write_script(Path(tmp), script))
            task_queue = f"record-{uuid.uuid4()}"
            async with running_worker(env.client, registry(), task_queue):
                dt = DurableTools(env.client, task_queue)
                run = await dt.start("pay", config=config, run_id="short_wire")
                await wait_for(run, lambda s: bool(s.pending_approvals))
                await run.approve("t1", decider="alice")
                await run.result()
                history = await run.handle.fetch_history()
        (HISTORIES / "short_wire.json").write_text(history.to_json())
        print(f"recorded short_wire: {len(history.events)} events")
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
