"""Running runs follow the worker's catalog, on a real dev server: a tool added, replaced or
withdrawn while a run waits (for an approval, a session's next message) reaches its next
model turn, however short the wait; an approved call runs with the arguments its approver
saw, whatever the tool's schema became meanwhile; and a run that does not wait durably reads
its catalog again only when a model turn reports a change, however slow its tools."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from durable_tools import (
    AgentConfig,
    DurableTools,
    RunStatus,
    SessionConfig,
    ToolContext,
    ToolRegistry,
)
from durable_tools.workflows import RunSnapshot
from durable_tools.workflows.catalog._run_catalog import (
    CATALOG_RECHECK,
    CATALOG_RECHECK_AFTER_WAIT,
)
from support import (
    answer,
    assert_not_wedged,
    assert_replays,
    calls,
    local_activity_types,
    running_worker,
    wait_for,
    write_script,
)

CITY_ONLY = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}
CITY_AND_UNITS = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "units": {"type": "string"}},
    "required": ["city", "units"],
    "additionalProperties": False,
}


def replies(conversation: list[Any]) -> dict[str, str]:
    return {m.tool_call_id: m.content or "" for m in conversation if m.role == "tool"}


def pending(snapshot: RunSnapshot) -> bool:
    return bool(snapshot.pending_approvals)


def lookup_handler(seen: list[dict[str, Any]], version: str) -> Any:
    def lookup(arguments: dict[str, Any], ctx: ToolContext) -> str:
        seen.append(dict(arguments))
        return f"{version}: {arguments.get('city')} in {arguments.get('units', 'no units')}"

    return lookup


async def test_a_waiting_run_sees_tools_changed_meanwhile_and_the_approval_binds(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    seen: list[dict[str, Any]] = []
    registry = ToolRegistry()
    registry.register_schema(
        lookup_handler(seen, "v1"), input_schema=CITY_ONLY, name="lookup", approval=True
    )

    @registry.tool(read_only=True)
    def leaving(x: int) -> str:
        """A tool about to be withdrawn."""
        return "still here"

    model = write_script(
        tmp_path,
        [
            calls(("a", "lookup", {"city": "Oslo"})),
            calls(
                ("b", "forecast", {"city": "Oslo"}),
                ("c", "lookup", {"city": "Bergen", "units": "metric"}),
                ("d", "leaving", {"x": 1}),
            ),
            answer("done"),
        ],
    )
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("weather", model=model)
        await wait_for(run, pending)
        # While the run waits: `lookup` gets a schema the shown arguments break, a tool
        # is added, another withdrawn. No worker restart.
        registry.register_schema(
            lookup_handler(seen, "v2"), input_schema=CITY_AND_UNITS, name="lookup", replace=True
        )

        @registry.tool(read_only=True)
        def forecast(city: str) -> str:
            """Tomorrow's weather."""
            return f"sun in {city}"

        registry.withdraw("leaving")
        # A person's wait (longer than code's answers) makes the run read its catalog.
        await asyncio.sleep(CATALOG_RECHECK_AFTER_WAIT.total_seconds() + 0.2)
        await run.approve("a", decider="alice")
        result = await run.result()
        texts = replies(await run.conversation())
        events = await run.events()
        history = await run.handle.fetch_history()
    assert result.status == RunStatus.COMPLETED
    # The approved call ran with the arguments alice saw, not re-checked against v2.
    assert seen[0] == {"city": "Oslo"}
    assert texts["a"] == "v2: Oslo in no units"
    # The next turn was offered the new catalog: the added tool, the new schema, and
    # not the withdrawn tool.
    assert texts["b"] == "sun in Oslo"
    assert texts["c"] == "v2: Bergen in metric"
    assert "still here" not in texts["d"] and "leaving" in texts["d"]
    changed = [e.detail or "" for e in events if e.event == "catalog.changed"]
    assert len(changed) == 1
    assert "added forecast" in changed[0] and "removed leaving" in changed[0]
    assert "changed lookup" in changed[0]
    assert "durable_tools.catalog_update" in local_activity_types(history)
    await assert_not_wedged(run.handle, allowed=0)
    await assert_replays(history)


SLOW_TOOL_SECONDS = 1.5
"""Longer than the one-second recheck runs had before: a turn after such a tool read the
catalog again, on an unchanged registry (as did most turns of a loaded worker)."""


def ping_registry(seconds: float = 0.0) -> ToolRegistry:
    """A registry of one read-only tool, `ping`, that takes `seconds`."""
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    async def ping() -> str:
        """Answers pong."""
        await asyncio.sleep(seconds)
        return "pong"

    return registry


@pytest.mark.parametrize("seconds", [0.0, SLOW_TOOL_SECONDS], ids=["quick", "slow-tool"])
async def test_a_run_reads_its_catalog_again_only_when_the_worker_reports_a_change(
    client: Client, task_queue: str, tmp_path: Path, seconds: float
) -> None:
    model = write_script(
        tmp_path, [calls(("a", "ping", {})), calls(("b", "ping", {})), answer("done")]
    )
    async with running_worker(client, ping_registry(seconds), task_queue):
        run = await DurableTools(client, task_queue).start("ping", model=model)
        result = await run.result()
        history = await run.handle.fetch_history()
        events = await run.events()
    assert result.status == RunStatus.COMPLETED and result.tool_calls == 2
    # Turns on an unchanged registry, quick or not: each model turn reported the
    # worker's version, so no catalog read after the first.
    assert "durable_tools.catalog_update" not in local_activity_types(history)
    assert not [e for e in events if e.event.startswith("catalog.")]
    await assert_replays(history)


async def added_during(seconds: float, registry: ToolRegistry) -> str:
    """Sleeps `seconds`, then adds the tool `added` to `registry` (a deploy mid-call)."""
    await asyncio.sleep(seconds)

    @registry.tool(read_only=True)
    def added() -> str:
        """Added while a tool ran."""
        return "added"

    return "slow"


async def test_a_tool_added_during_a_slow_tool_reaches_the_run_a_turn_later(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    async def slow() -> str:
        """Takes a while; a tool is added meanwhile."""
        return await added_during(SLOW_TOOL_SECONDS, registry)

    model = write_script(
        tmp_path,
        [
            calls(("a", "slow", {})),
            calls(("b", "added", {})),  # offered the catalog the run had
            calls(("c", "added", {})),  # the turn before reported the change
            answer("done"),
        ],
    )
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("slow", model=model)
        result = await run.result()
        texts = replies(await run.conversation())
        history = await run.handle.fetch_history()
    assert result.status == RunStatus.COMPLETED
    assert texts["c"] == "added"
    assert local_activity_types(history).count("durable_tools.catalog_update") == 1
    await assert_replays(history)


# Over a minute of one tool's sleep: with the reliability tests in `make test-slow`.
@pytest.mark.slow
@pytest.mark.timeout(300)
async def test_a_turn_after_a_tool_longer_than_the_recheck_sees_tools_added_meanwhile(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    registry = ToolRegistry()

    @registry.tool(read_only=True, start_to_close_timeout=300)
    async def slower() -> str:
        """Outlasts the recheck interval; a tool is added meanwhile."""
        return await added_during(CATALOG_RECHECK.total_seconds() + 1, registry)

    model = write_script(
        tmp_path, [calls(("a", "slower", {})), calls(("b", "added", {})), answer("done")]
    )
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("slower", model=model)
        result = await run.result()
        texts = replies(await run.conversation())
    assert result.status == RunStatus.COMPLETED
    assert texts["b"] == "added"


async def test_a_sessions_next_message_sees_a_tool_added_between_messages(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    registry = ping_registry()
    model = write_script(
        tmp_path,
        [
            calls(("a", "ping", {})),
            answer("one"),
            calls(("b", "added", {})),
            answer("two"),
        ],
    )
    config = AgentConfig(model=model, session=SessionConfig())
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("first", config=config)
        await wait_for(run, lambda s: s.status == RunStatus.AWAITING_MESSAGE)

        @registry.tool(read_only=True)
        def added() -> str:
            """Added while the session waited for its next message."""
            return "added"

        # The wait for the message (a person's pause) makes the session read the
        # worker's catalog again before answering it.
        await asyncio.sleep(CATALOG_RECHECK_AFTER_WAIT.total_seconds() + 0.2)
        second = await asyncio.wait_for(run.send("second"), 60)
        texts = replies(await run.conversation())
        events = await run.events()
        await run.close()
        await run.result()
        history = await run.handle.fetch_history()
    assert second.answer == "two"
    assert texts["b"] == "added"
    changed = [e.detail or "" for e in events if e.event == "catalog.changed"]
    assert changed == ["added added"]
    assert local_activity_types(history).count("durable_tools.catalog_update") == 1
    await assert_replays(history)


TOOLS = 1_000
RUNS = 100
WAVE = 20


def numbered_handler(version: str) -> Any:
    def numbered(arguments: dict[str, Any], ctx: ToolContext) -> str:
        return version

    return numbered


# A load test (about 50 s alone, over two minutes beside the rest of the suite): with the
# reliability tests in `make test-slow`.
@pytest.mark.slow
@pytest.mark.timeout(600)
async def test_thousands_of_tools_replaced_while_hundreds_of_runs_wait(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    registry = ToolRegistry()
    for i in range(TOOLS):
        registry.register_schema(
            numbered_handler("v1"),
            input_schema={"type": "object", "properties": {"n": {"type": "integer"}}},
            name=f"tool_{i}",
            description=f"numbered tool {i}, first version",
            approval=i == 0,
        )
    model = write_script(
        tmp_path,
        [
            calls(("a", "tool_0", {"n": 1})),
            calls(("b", "tool_1", {"n": 2})),
            answer("done"),
        ],
    )
    async with running_worker(client, registry, task_queue):
        tools = DurableTools(client, task_queue)
        runs = []
        # In waves: each start unpacks a 1,000-tool catalog in its workflow task, and two
        # shared cores cannot do hundreds of those within the 2 s deadlock deadline.
        for wave in range(0, RUNS, WAVE):
            started = await asyncio.gather(
                *(tools.start(f"run {i}", model=model) for i in range(wave, wave + WAVE))
            )
            await asyncio.gather(*(wait_for(run, pending, timeout=300) for run in started))
            runs += started
        for i in range(TOOLS):  # every tool replaced while all the runs wait
            registry.register_schema(
                numbered_handler("v2"),
                input_schema={"type": "object", "properties": {"n": {"type": "integer"}}},
                name=f"tool_{i}",
                description=f"numbered tool {i}, second version",
                replace=True,
            )

        @registry.tool(read_only=True)
        def fresh() -> str:
            """A tool added while the runs waited."""
            return "fresh"

        await asyncio.sleep(CATALOG_RECHECK_AFTER_WAIT.total_seconds() + 0.2)
        results = []
        for wave in range(0, RUNS, WAVE):
            batch = runs[wave : wave + WAVE]
            await asyncio.gather(*(run.approve("a", decider="alice") for run in batch))
            results += await asyncio.gather(*(run.result() for run in batch))
        sample = runs[:: RUNS // 10]
        conversations = await asyncio.gather(*(run.conversation() for run in sample))
        events = await asyncio.gather(*(run.events() for run in sample))
    assert {result.status for result in results} == {RunStatus.COMPLETED}
    for conversation, run_events in zip(conversations, events, strict=True):
        texts = replies(conversation)
        assert texts["a"] == texts["b"] == "v2"
        changed = [e.detail or "" for e in run_events if e.event == "catalog.changed"]
        assert len(changed) == 1 and "added fresh" in changed[0]
        assert "and 990 more" in changed[0]  # named up to ten, counted beyond


async def test_a_run_continued_as_new_keeps_following_the_workers_catalog(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    def ping(n: int) -> str:
        """Answers pong."""
        return f"pong {n}"

    @registry.tool(approval=True)
    def proceed() -> str:
        """Asks a person first."""
        return "proceeding"

    steps = [calls((f"p{i}", "ping", {"n": i})) for i in range(6)]
    model = write_script(
        tmp_path,
        [*steps, calls(("go", "proceed", {})), calls(("late", "later", {})), answer("done")],
    )
    config = AgentConfig(model=model, continue_as_new_after_events=20)
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("ping", config=config)
        snapshot = await wait_for(run, pending, timeout=60)
        assert snapshot.continued >= 1  # waiting in a continued run

        @registry.tool(read_only=True)
        def later() -> str:
            """Added while the continued run waited."""
            return "later"

        await asyncio.sleep(CATALOG_RECHECK_AFTER_WAIT.total_seconds() + 0.2)
        await run.approve("go", decider="alice")
        result = await run.result()
        texts = replies(await run.conversation())
    assert result.status == RunStatus.COMPLETED
    assert texts["late"] == "later"
