"""Record the histories of behaviour that changed under a `workflow.patched` marker, for
test_replay.py. Both were recorded with the code before the change, and are kept as
they were: a replay must do what these runs did.

- `turn_limit_ended.json`: the model asks for more calls than `max_tool_calls_per_turn`;
  the run ended `limit_reached` (today: a repair message, `TURN_LIMIT_PATCH`).
- `retry_budget_exceeded.json`: a mutating tool fails until past its schedule-to-close
  budget; the workflow retried it past the budget (today: it stops at the deadline,
  `RETRY_BUDGET_PATCH`).

    .venv/bin/python tests/workflows/record_semantics_history.py [name ...]
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from record_histories import recording_env, save

from durable_tools import AgentConfig, DurableTools, Limits, RetrySpec, ToolRegistry
from support import answer, calls, running_worker, write_script


def tools() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    def note(n: int) -> str:
        """Note a number."""
        return f"noted {n}"

    @registry.tool(
        retry=RetrySpec(initial_interval=0.5, backoff_coefficient=1.0, maximum_attempts=4),
        schedule_to_close_timeout=1.0,
    )
    def send(text: str) -> str:
        """Send a message (mutating: the workflow retries it)."""
        raise ConnectionError("mail server unavailable")

    return registry


SCRIPTS = {
    "turn_limit_ended": [calls(*[(f"c{i}", "note", {"n": i}) for i in range(3)]), answer("x")],
    "retry_budget_exceeded": [calls(("s1", "send", {"text": "hi"})), answer("gave up")],
}


async def record(name: str) -> None:
    async with recording_env() as (client, directory):
        config = AgentConfig(
            model=write_script(directory, SCRIPTS[name]),
            limits=Limits(max_tool_calls_per_turn=2),
        )
        task_queue = f"record-{uuid.uuid4()}"
        async with running_worker(client, tools(), task_queue):
            run = await DurableTools(client, task_queue).start("go", config=config, run_id=name)
            await run.result()
            save(name, await run.handle.fetch_history())


if __name__ == "__main__":
    for wanted in sys.argv[1:] or list(SCRIPTS):
        asyncio.run(record(wanted))
