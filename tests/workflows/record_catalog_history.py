"""Record `histories/packed_catalog.json`: a run on the packed catalog, for test_replay.py.

A run with the `packed-catalog` patch: the packed catalog activity, a tool beyond
`max_advertised_tools` found through the BM25 `search_tools`, then called. Re-record
only for compatible changes, as with record_histories.py:

    .venv/bin/python tests/workflows/record_catalog_history.py
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
from support import answer, calls, running_worker, write_script


async def main() -> None:
    async with recording_env() as (client, directory):
        script = [
            calls(("s1", "search_tools", {"query": "search the archive"})),
            calls(("a1", "archive_search", {"query": "q"}), ("l1", "lookup", {"key": "k"})),
            answer("done"),
        ]
        config = AgentConfig(model=write_script(directory, script), max_advertised_tools=1)
        task_queue = f"record-{uuid.uuid4()}"
        async with running_worker(client, registry(), task_queue):
            dt = DurableTools(client, task_queue)
            run = await dt.start("archive", config=config, run_id="packed_catalog")
            await run.result()
            save("packed_catalog", await run.handle.fetch_history())


if __name__ == "__main__":
    asyncio.run(main())
