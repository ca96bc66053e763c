"""Record the wait histories for test_replay.py: a question for the user, then a callback.

One run: the model calls an MCP tool whose server asks the user a question (answered),
then a callback tool (answered by a client).

- `waits_unshown.json` (recorded with the code before `_wait.WAITS_SHOWN_PATCH`, kept as
  it was): neither wait changed the run's status, and the question had no deadline.
- `waits_shown.json`: both waits shown (status upserts) and the question bounded by
  `AgentConfig.input_timeout_seconds` (a timer).

Re-record only for compatible changes, as with record_histories.py:

    .venv/bin/python tests/workflows/record_wait_history.py [waits_unshown|waits_shown]
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from record_histories import recording_env, save

from durable_tools import AgentConfig, DurableTools, ToolRegistry, answer_input
from durable_tools.callbacks import answer_callback, pending_callbacks
from durable_tools.sources import McpPool, McpStdio, attach_mcp
from support import answer, calls, running_worker, wait_for, write_script

SERVER = str(Path(__file__).resolve().parents[1] / "sources" / "mcp_elicit_server.py")


async def record(name: str) -> None:
    pool = McpPool(connect_timeout=20)
    tools = ToolRegistry()
    await attach_mcp(
        tools, McpStdio(sys.executable, (SERVER,), name="ask", elicitation=True), pool=pool
    )
    tools.callback_tool(
        "get_location",
        parameters={"type": "object", "properties": {}, "additionalProperties": False},
        timeout=600,
    )
    try:
        async with recording_env() as (client, directory):
            script = [
                calls(("g1", "ask__greet", {"greeting": "hello"})),
                calls(("c1", "get_location", {})),
                answer("done"),
            ]
            config = AgentConfig(model=write_script(directory, script))
            task_queue = f"record-{uuid.uuid4()}"
            async with running_worker(client, tools, task_queue):
                run = await DurableTools(client, task_queue).start("go", config=config, run_id=name)
                await wait_for(run, lambda s: bool(s.pending_inputs), timeout=30)
                await answer_input(run, "g1", "accept", {"name": "Ada"})
                await wait_for(run, lambda s: bool(s.pending_callbacks), timeout=30)
                [call] = await pending_callbacks(run.handle)
                await answer_callback(run.handle, call, output={"lat": 1})
                await run.result()
                save(name, await run.handle.fetch_history())
    finally:
        await pool.aclose()


if __name__ == "__main__":
    for wanted in sys.argv[1:] or ["waits_shown"]:
        asyncio.run(record(wanted))
