"""A worker process that shares nothing with others but Temporal and the artifact store.

    python tests/s3/s3_worker.py ADDRESS TASK_QUEUE

The store comes from the environment (`DURABLE_TOOLS_ARTIFACTS=s3://...`, the endpoint
and the AWS credentials), as for `durable-tools worker`; `DURABLE_TOOLS_HOME` is the
process's own. Prints `ready` once polling.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys

from durable_tools import ToolRegistry, build_worker, connect


def report_text(rows: int) -> str:
    """The deterministic output of `report` (the test computes it too)."""
    return "id,square\n" + "".join(f"{i},{i * i}\n" for i in range(rows))


def make_registry() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    def report(rows: int) -> str:
        """A large CSV report: far over the output limit, so it goes to the store."""
        return report_text(rows)

    return registry


async def main(address: str, task_queue: str) -> None:
    client = await connect(address)
    stop = asyncio.Event()
    # SIGTERM shuts the worker down cleanly: the server then stops routing the run's next
    # workflow task (and queries) to this worker's sticky queue.
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with build_worker(client, make_registry(), task_queue=task_queue):
        print("ready", flush=True)
        with contextlib.suppress(TimeoutError):  # never outlive a stuck test by much
            await asyncio.wait_for(stop.wait(), 600)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
