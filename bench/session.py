"""`python -m bench.session [--messages 100] [--fresh 20] [--address HOST:PORT]`.

A session of N messages against fresh runs of the same work, interleaved (a fresh run
after every N/F messages): each message (and each fresh run) is one tool call and an
answer, from the scripted model. Every message is sent as a
chat front end would, with update-with-start (`DurableTools.send`: one call a message,
the first one starts the session). Prints and returns:

- time from message to answer (p50, p95; first and last tenth, to show it does not grow
  with the session's age) against start-to-result of a fresh run;
- history bytes per message: the bytes of every run of the session's chain (it continues
  as new while idle) divided by the messages, against a fresh run's whole history;
- the runs of the chain and the largest history one of them holds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from temporalio.client import Client

from bench._common import Bench, server_client, tool_steps
from durable_tools import AgentConfig, DurableTools, Limits, SessionConfig

__all__ = ["measure_session"]


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(share * len(ordered)), len(ordered) - 1)]


async def _chain_bytes(client: Client, workflow_id: str) -> list[int]:
    """The history bytes of each run of a workflow id's chain, oldest first."""
    sizes: list[tuple[Any, int]] = []
    async for execution in client.list_workflows(f"WorkflowId = '{workflow_id}'"):
        handle = client.get_workflow_handle(workflow_id, run_id=execution.run_id)
        history = await handle.fetch_history()
        sizes.append((execution.start_time, sum(e.ByteSize() for e in history.events)))
    return [size for _, size in sorted(sizes, key=lambda pair: pair[0])]


async def measure_session(
    bench: Bench, *, messages: int, fresh: int, after_events: int
) -> dict[str, Any]:
    """Time and history of a session of `messages` messages and of `fresh` fresh runs."""
    tools = DurableTools(bench.client, bench.durable_queue)
    one = tool_steps(1)  # a tool call, then the answer
    script = bench.script([step for _ in range(messages) for step in one])
    config = AgentConfig(
        model=f"scripted:{script}",
        limits=Limits(max_turns=3, max_tool_calls=2),
        continue_as_new_after_events=after_events,
        session=SessionConfig(idle_timeout_seconds=3600),
    )
    session_id = f"bench-session-{uuid.uuid4().hex[:8]}"
    fresh_script = bench.script(one)
    every = max(messages // max(fresh, 1), 1)
    latencies: list[float] = []
    fresh_times: list[float] = []
    fresh_bytes: list[int] = []
    for n in range(messages):
        started = time.perf_counter()
        reply = await tools.send(session_id, f"message {n}", config=config)
        latencies.append(time.perf_counter() - started)
        if reply.tool_calls != 1 or reply.status != "awaiting_message":
            raise RuntimeError(f"message {n} ended badly: {reply}")
        # Fresh runs interleaved with the messages: a shared machine's load moves.
        if n % every == every - 1 and len(fresh_times) < fresh:
            started = time.perf_counter()
            handle = await bench.run_durable(fresh_script, 1)
            fresh_times.append(time.perf_counter() - started)
            history = await handle.fetch_history()
            fresh_bytes.append(sum(e.ByteSize() for e in history.events))
    run = tools.run(session_id)
    await run.close()
    await run.result()
    chain = await _chain_bytes(bench.client, session_id)

    tenth = max(messages // 10, 1)
    return {
        "messages": messages,
        "message_ms": {
            "p50": statistics.median(latencies) * 1000,
            "p95": _percentile(latencies, 0.95) * 1000,
            "first_tenth_median": statistics.median(latencies[:tenth]) * 1000,
            "last_tenth_median": statistics.median(latencies[-tenth:]) * 1000,
        },
        "fresh_run_ms": {
            "p50": statistics.median(fresh_times) * 1000,
            "p95": _percentile(fresh_times, 0.95) * 1000,
        },
        "history_bytes_per_message": sum(chain) / messages,
        "fresh_run_history_bytes": statistics.median(fresh_bytes),
        "chain_runs": len(chain),
        "largest_run_history_bytes": max(chain),
        "continue_as_new_after_events": after_events,
    }


async def _main(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as work:
        async with server_client(args.address, Path(work)) as (client, _):
            bench = Bench(client, Path(work))
            async with bench.workers():
                return await measure_session(
                    bench, messages=args.messages, fresh=args.fresh, after_events=args.after_events
                )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100)
    parser.add_argument("--fresh", type=int, default=20, help="fresh runs to compare with")
    parser.add_argument("--after-events", type=int, default=1000, help="continue-as-new bound")
    parser.add_argument("--address", help="an existing server (default: a dev server of our own)")
    print(json.dumps(asyncio.run(_main(parser.parse_args())), indent=2))
