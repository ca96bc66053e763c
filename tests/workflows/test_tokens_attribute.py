"""`DurableToolsTokens`: a run's token total as a search attribute, where it is registered.

Operators filter and sort runs by it in the UI (`DurableToolsTokens > 100000`). It rides in
the status upserts (no extra history event), and a namespace set up before it existed (the
test session's server registers only the four older attributes) keeps running runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from durable_tools import AgentConfig, DurableTools, RunStatus, ToolRegistry
from durable_tools.search_attributes import AGENT_STATUS, TOKENS
from durable_tools.server import DevServer
from support import answer, assert_not_wedged, calls, free_port, running_worker, write_script


def _tools() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    def lookup(key: str) -> str:
        """Look a key up."""
        return f"value of {key}"

    return registry


def _script(tmp_path: Path) -> str:
    steps: list[dict[str, Any]] = [
        {
            **calls(("c1", "lookup", {"key": "a"})),
            "usage": {"input_tokens": 100, "output_tokens": 7},
        },
        {
            **calls(("c2", "lookup", {"key": "b"})),
            "usage": {"input_tokens": 130, "output_tokens": 9},
        },
        {**answer("done"), "usage": {"input_tokens": 160, "output_tokens": 20}},
    ]
    return write_script(tmp_path, steps)


def _upserts(history: Any) -> int:
    """The run's own search-attribute upserts (not the SDK's `TemporalChangeVersion` one,
    which records a `workflow.patched` marker)."""
    return sum(
        1
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES
        and set(
            e.upsert_workflow_search_attributes_event_attributes.search_attributes.indexed_fields
        )
        != {"TemporalChangeVersion"}
    )


async def test_a_finished_run_holds_its_token_total(tmp_path: Path) -> None:
    server = DevServer(tmp_path / "server", port=free_port(), headless=True)
    client = await server.start()  # registers every attribute of SEARCH_ATTRIBUTES
    try:
        async with running_worker(client, _tools(), "tokens"):
            dt = DurableTools(client, "tokens")
            run = await dt.start("go", config=AgentConfig(model=_script(tmp_path)))
            result = await run.result()
            assert result.status == RunStatus.COMPLETED
            description = await run.handle.describe()
            assert description.typed_search_attributes.get(TOKENS) == 100 + 7 + 130 + 9 + 160 + 20
            history = await run.handle.fetch_history()
            # Running from the start (the client sets it), completed at the end: one upsert,
            # and the tokens add none per turn.
            assert _upserts(history) == 1
            await assert_not_wedged(run.handle)
    finally:
        await server.stop()


async def test_a_namespace_without_the_attribute_still_runs(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with running_worker(client, _tools(), task_queue):
        dt = DurableTools(client, task_queue)
        run = await dt.start("go", config=AgentConfig(model=_script(tmp_path)))
        result = await run.result()
        assert result.status == RunStatus.COMPLETED
        await assert_not_wedged(run.handle)
        description = await run.handle.describe()
        assert description.typed_search_attributes.get(AGENT_STATUS) == "completed"
        assert description.typed_search_attributes.get(TOKENS) is None
