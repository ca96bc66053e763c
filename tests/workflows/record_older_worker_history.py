"""Record `histories/older_worker.json`: a run started by today's client, run by an older worker.

During an upgrade a run whose input says `revision` 1 can reach a worker from before the
revision existed: it ignores the field, asks the `packed-catalog` patch (a marker and a
`TemporalChangeVersion` upsert) and upserts "running" at its first turn. A newer worker
replaying that run must record the same. Run this with the package from before the
revision on the path (the client part sends the new input as plain JSON):

    git archive 4a99669 src | tar -x -C /tmp/older
    PYTHONPATH=/tmp/older/src .venv/bin/python tests/workflows/record_older_worker_history.py
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from pathlib import Path

from temporalio.common import SearchAttributePair, TypedSearchAttributes

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from record_histories import recording_env, registry, save

from durable_tools import search_attributes as sa
from support import answer, calls, running_worker, write_script


async def main() -> None:
    async with recording_env() as (client, directory):
        script = [calls(("l1", "lookup", {"key": "k"})), answer("done")]
        model = write_script(directory, script)
        task_queue = f"record-{uuid.uuid4()}"
        async with running_worker(client, registry(), task_queue):
            handle = await client.start_workflow(
                "AgentWorkflow",
                {"prompt": "look", "config": {"model": model}, "revision": 1},
                id="older_worker",
                task_queue=task_queue,
                search_attributes=TypedSearchAttributes(
                    [
                        SearchAttributePair(sa.AGENT_NAME, "agent"),
                        SearchAttributePair(sa.AGENT_STATUS, "running"),
                        SearchAttributePair(sa.PENDING_APPROVALS, 0),
                        SearchAttributePair(sa.AWAITING_TOOL, ""),
                        SearchAttributePair(sa.TOKENS, 0),
                    ]
                ),
            )
            await handle.result()
            save("older_worker", await handle.fetch_history())


if __name__ == "__main__":
    asyncio.run(main())
