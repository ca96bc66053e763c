"""Record `histories/packed_catalog.json`: a run on the packed catalog, for test_replay.py.

A run with the `packed-catalog` patch: the packed catalog activity, a tool beyond
`max_advertised_tools` found through the BM25 `search_tools`, then called. Re-record
only for compatible changes, as with record_histories.py:

    .venv/bin/python tests/workflows/record_catalog_history.py
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
from support import answer, calls, running_worker, write_script


async def main() -> None:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=find_temporal_cli(),
        data_converter=pydantic_data_converter,
        search_attributes=list(SEARCH_ATTRIBUTES),
    )
    try:
        with tempfile.TemporaryDirectory() as tmp:
            script = [
                calls(("s1", "search_tools", {"query": "search the archive"})),
                calls(("a1", "archive_search", {"query": "q"}), ("l1", "lookup", {"key": "k"})),
                answer("done"),
            ]
            config = AgentConfig(model=write_script(Path(tmp), script), max_advertised_tools=1)
            task_queue = f"record-{uuid.uuid4()}"
            async with running_worker(env.client, registry(), task_queue):
                dt = DurableTools(env.client, task_queue)
                run = await dt.start("archive", config=config, run_id="packed_catalog")
                await run.result()
                history = await run.handle.fetch_history()
        (HISTORIES / "packed_catalog.json").write_text(history.to_json())
        print(f"recorded packed_catalog: {len(history.events)} events")
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
