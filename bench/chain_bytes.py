"""`python -m bench.chain_bytes [TURNS] [AFTER_EVENTS]`: where a continued chain's bytes go.

Runs one scripted run of TURNS tool calls (one a turn) with
`continue_as_new_after_events=AFTER_EVENTS` on a dev server of its own, then prints, for
each run of the chain in order: its events and history bytes, the carried input it
started from and the one it handed on, the largest model and tool activity inputs, and
the event types holding the most bytes. A run whose bytes grow with its place in the
chain carries something that grows with the chain's age.
"""

from __future__ import annotations

import asyncio
import collections
import sys
import tempfile
from pathlib import Path

from temporalio.api.common.v1 import Payloads
from temporalio.api.enums.v1 import EventType

from bench._common import Bench, server_client, tool_steps
from durable_tools import AgentConfig, DurableTools, Limits

__all__ = ["main"]


def _bytes(payloads: Payloads) -> int:
    return sum(p.ByteSize() for p in payloads.payloads)


async def main(turns: int, after_events: int) -> None:
    with tempfile.TemporaryDirectory() as work:
        async with server_client(None, Path(work)) as (client, _):
            bench = Bench(client, Path(work))
            async with bench.workers():
                script = bench.script(tool_steps(turns))
                config = AgentConfig(
                    model=f"scripted:{script}",
                    limits=Limits(max_turns=turns + 2, max_tool_calls=turns + 1),
                    continue_as_new_after_events=after_events,
                )
                dt = DurableTools(client, bench.durable_queue)
                run = await dt.start("long run", config=config)
                print(await run.result())
                query = f"WorkflowId = '{run.run_id}'"
                executions = [e async for e in client.list_workflows(query)]
                for index, execution in enumerate(sorted(executions, key=lambda e: e.start_time)):
                    handle = client.get_workflow_handle(run.run_id, run_id=execution.run_id)
                    history = await handle.fetch_history()
                    by_type: collections.Counter[str] = collections.Counter()
                    model_in: list[int] = [0]
                    tool_in: list[int] = [0]
                    carried_in = handed_on = 0
                    for event in history.events:
                        name = EventType.Name(event.event_type).removeprefix("EVENT_TYPE_")
                        by_type[name] += event.ByteSize()
                        if event.HasField("workflow_execution_started_event_attributes"):
                            started = event.workflow_execution_started_event_attributes
                            carried_in = _bytes(started.input)
                        if event.HasField("workflow_execution_continued_as_new_event_attributes"):
                            handed_on = _bytes(
                                event.workflow_execution_continued_as_new_event_attributes.input
                            )
                        if event.HasField("activity_task_scheduled_event_attributes"):
                            scheduled = event.activity_task_scheduled_event_attributes
                            is_model = "model" in scheduled.activity_type.name
                            (model_in if is_model else tool_in).append(_bytes(scheduled.input))
                    total = sum(by_type.values())
                    print(
                        f"run {index}: {len(history.events)} events, {total:,} B; input "
                        f"{carried_in:,} B, handed on {handed_on:,} B; largest model input "
                        f"{max(model_in):,} B, tool input {max(tool_in):,} B"
                    )
                    print("   ", ", ".join(f"{k} {v:,}" for k, v in by_type.most_common(4)))


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:3]]
    asyncio.run(main(*(args + [300, 200][len(args) :])))
