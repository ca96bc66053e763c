"""Record the histories replayed by test_replay.py from real runs on a real dev server.

Run it after a deliberate, compatible change to the workflow's recorded behaviour:

    .venv/bin/python tests/workflows/record_histories.py

    .venv/bin/python tests/workflows/record_histories.py callbacks   # only these scenarios

Each scenario's history lands in tests/workflows/histories/<name>.json. Commit them: the
replay test then fails the build whenever a workflow change would break runs in flight.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from durable_tools import (
    AgentConfig,
    AgentRun,
    ApprovalPolicy,
    DurableTools,
    ExecutionStrategy,
    ToolContext,
    ToolRegistry,
)
from durable_tools.callbacks import CallbackRejected, answer_callback
from durable_tools.search_attributes import SEARCH_ATTRIBUTES
from durable_tools.server import find_temporal_cli
from support import answer, calls, running_worker, wait_for, write_script

HISTORIES = Path(__file__).parent / "histories"


@contextlib.asynccontextmanager
async def recording_env() -> AsyncIterator[tuple[Client, Path]]:
    """A dev server with the search attributes, its client, and a scratch directory."""
    HISTORIES.mkdir(exist_ok=True)
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=find_temporal_cli(),
        data_converter=pydantic_data_converter,
        search_attributes=list(SEARCH_ATTRIBUTES),
    )
    try:
        with tempfile.TemporaryDirectory() as tmp:
            yield env.client, Path(tmp)
    finally:
        await env.shutdown()


def save(name: str, history: WorkflowHistory) -> None:
    """Write `history` as histories/<name>.json."""
    (HISTORIES / f"{name}.json").write_text(history.to_json())
    print(f"recorded {name}: {len(history.events)} events")


# Each run's workflow id is its scenario's name, which is also the file's name: replay
# needs the same id (sub-agent ids derive from it).


def registry() -> ToolRegistry:
    tools = ToolRegistry()

    @tools.tool(read_only=True)
    def lookup(key: str) -> dict[str, Any]:
        """Look a key up."""
        return {"key": key, "value": len(key)}

    @tools.tool(approval=True, idempotent=True, redact=("note",))
    def transfer(amount: int, note: str = "", ctx: ToolContext | None = None) -> str:
        """Move money (needs approval)."""
        return f"moved {amount} with key {ctx.idempotency_key if ctx else '?'}"

    @tools.tool(read_only=True, loading="deferred")
    def archive_search(query: str) -> list[str]:
        """Search the archive."""
        return [query.upper()]

    tools.callback_tool(
        "get_location",
        description="Where the user's device is (run by a client).",
        output={"type": "object", "properties": {"lat": {"type": "number"}}},
    )
    return tools


def with_subagent(tools: ToolRegistry, directory: Path) -> ToolRegistry:
    child_model = write_script(
        directory, [calls(("k1", "lookup", {"key": "child"})), answer("child answer")]
    )
    tools.subagent(
        AgentConfig(name="helper", model=child_model),
        name="helper",
        description="A helper agent.",
    )
    payer_model = write_script(
        directory, [calls(("x1", "transfer", {"amount": 5, "note": "n"})), answer("paid")]
    )
    tools.subagent(
        AgentConfig(name="payer", model=payer_model),
        name="payer",
        description="A sub-agent whose call waits for approval.",
    )
    return tools


async def record(client: Client, directory: Path) -> None:
    scenarios: dict[str, Callable[[DurableTools, str], Awaitable[AgentRun]]] = {}

    async def tools_and_repairs(dt: DurableTools, model: str) -> AgentRun:
        return await dt.start("look things up", model=model, run_id="tools_and_repairs")

    async def approvals(dt: DurableTools, model: str) -> AgentRun:
        config = AgentConfig(
            model=model,
            strategy=ExecutionStrategy(mode="parallel"),
            approval=ApprovalPolicy(deciders=("alice",)),
        )
        run = await dt.start("two transfers", config=config, run_id="approvals")
        await wait_for(run, lambda s: {p.call_id for p in s.pending_approvals} >= {"t1", "t2"})
        await run.approve("t2", decider="alice", reason="fine")
        await run.deny("t1", decider="alice", reason="too much")
        return run

    async def continued(dt: DurableTools, model: str) -> AgentRun:
        return await dt.start(
            "count",
            config=AgentConfig(model=model, continue_as_new_after_events=30),
            run_id="continued",
        )

    scripts: dict[str, list[dict[str, Any]]] = {
        "tools_and_repairs": [
            calls(("l1", "lookup", {"key": "abc"}), ("bad", "lookup", '{"key": ')),
            calls(("s1", "search_tools", {"query": "archive"}), ("x", "nope", {})),
            calls(("a1", "archive_search", {"query": "q"})),
            answer("done"),
        ],
        "approvals": [
            calls(("t1", "transfer", {"amount": 900}), ("t2", "transfer", {"amount": 5})),
            answer("one moved"),
        ],
        "continued": [calls((f"c{i}", "lookup", {"key": "k" * i})) for i in range(6)]
        + [answer("counted")],
    }

    async def subagent(dt: DurableTools, model: str) -> AgentRun:
        return await dt.start("delegate", model=model, run_id="subagent")

    async def subagent_waits(dt: DurableTools, model: str) -> AgentRun:
        # The child tells the parent it waits (a signal), and again when decided.
        run = await dt.start("delegate a payment", model=model, run_id="subagent_waits")
        await wait_for(run, lambda s: bool(s.subagent_approvals))
        await run.approve("x1", decider="alice")
        child = dt.run("subagent_waits.p1")
        await child.result()
        save("subagent_waits_child", await child.handle.fetch_history())
        return run

    scripts["subagent_waits"] = [calls(("p1", "payer", {"task": "pay"})), answer("done")]

    async def subagent_notice_token(dt: DurableTools, model: str) -> AgentRun:
        # As `subagent_waits`, with the call's token (`subagent-notice-token`) in the
        # child's input and in each notice.
        run = await dt.start("delegate a payment", model=model, run_id="subagent_notice_token")
        await wait_for(run, lambda s: bool(s.subagent_approvals))
        await run.approve("x1", decider="alice")
        child = dt.run("subagent_notice_token.p1")
        await child.result()
        save("subagent_notice_token_child", await child.handle.fetch_history())
        return run

    scripts["subagent_notice_token"] = scripts["subagent_waits"]

    async def callbacks(dt: DurableTools, model: str) -> AgentRun:
        run = await dt.start("where am I?", model=model, run_id="callbacks")
        pending = await wait_for(run, lambda s: bool(s.pending_callbacks))
        refused = pending.pending_callbacks[0]
        with contextlib.suppress(CallbackRejected):  # breaks the schema: never in history
            await answer_callback(run.handle, refused, output={"lat": "north"})
        await answer_callback(run.handle, refused, output={"lat": 48.85})
        return run

    scripts["callbacks"] = [calls(("g1", "get_location", {})), answer("located")]

    scripts["subagent"] = [calls(("h1", "helper", {"task": "look up child"})), answer("ok")]
    scenarios = {
        "tools_and_repairs": tools_and_repairs,
        "approvals": approvals,
        "continued": continued,
        "subagent": subagent,
        "subagent_waits": subagent_waits,
        "subagent_notice_token": subagent_notice_token,
        "callbacks": callbacks,
    }
    if only := set(sys.argv[1:]):
        scenarios = {name: run for name, run in scenarios.items() if name in only}
    task_queue = f"record-{uuid.uuid4()}"
    async with running_worker(client, with_subagent(registry(), directory), task_queue):
        dt = DurableTools(client, task_queue)
        for name, scenario in scenarios.items():
            run = await scenario(dt, write_script(directory, scripts[name]))
            await run.result()
            history = await run.handle.fetch_history()
            save(name, history)


async def main() -> None:
    async with recording_env() as (client, directory):
        await record(client, directory)


if __name__ == "__main__":
    asyncio.run(main())
