"""Calls per turn are repaired, calls per run end the run (docs/limits.md), on the real
dev server."""

from __future__ import annotations

from pathlib import Path

from temporalio.client import Client

from durable_tools import AgentConfig, DurableTools, Limits, RunStatus, ToolRegistry
from support import answer, assert_not_wedged, calls, running_worker, write_script


def counting_registry(ran: list[int]) -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    def note(n: int) -> str:
        """Note a number."""
        ran.append(n)
        return f"noted {n}"

    return registry


def wide_turn(count: int) -> dict[str, object]:
    return calls(*[(f"c{i}", "note", {"n": i}) for i in range(count)])


async def test_calls_over_the_turn_limit_get_a_repair_message_and_the_first_n_run(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    ran: list[int] = []
    config = AgentConfig(
        model=write_script(tmp_path, [wide_turn(6), answer("done")]),
        limits=Limits(max_tool_calls_per_turn=4),
    )
    async with running_worker(client, counting_registry(ran), task_queue):
        run = await DurableTools(client, task_queue).start("wide", config=config)
        result = await run.result()
        conversation = await run.conversation()
        timeline = {r.call_id: r for r in await run.timeline()}
        events = await run.events()
        await assert_not_wedged(run.handle)
    assert result.status == RunStatus.COMPLETED and result.final_answer == "done"
    assert sorted(ran) == [0, 1, 2, 3]
    assert result.tool_calls == 4  # the refused calls did not run: they are not counted
    replies = [m for m in conversation if m.role == "tool"]
    # One answer per call, in the order the model asked for them.
    assert [m.tool_call_id for m in replies] == [f"c{i}" for i in range(6)]
    for refused in replies[4:]:
        assert refused.is_error and refused.at is not None
        text = refused.content or ""
        assert "was not run" in text and "max_tool_calls_per_turn" in text
        assert "at most 4" in text and "6 tool calls" in text
    assert all(not m.is_error for m in replies[:4])
    assert timeline["c5"].status == "invalid" and timeline["c5"].error_kind == "TooManyCalls"
    assert timeline["c0"].status == "completed"
    refused_events = [e for e in events if e.event == "tool.invalid_args"]
    assert [e.call_id for e in refused_events] == ["c4", "c5"]


async def test_the_tool_calls_per_run_limit_still_ends_the_run(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    ran: list[int] = []
    config = AgentConfig(
        model=write_script(tmp_path, [wide_turn(3), wide_turn(3), answer("done")]),
        limits=Limits(max_tool_calls=5, max_tool_calls_per_turn=4),
    )
    async with running_worker(client, counting_registry(ran), task_queue):
        run = await DurableTools(client, task_queue).start("budget", config=config)
        result = await run.result()
    assert result.status == RunStatus.LIMIT_REACHED
    assert "max_tool_calls (5)" in (result.reason or "")
    assert len(ran) == 3


async def test_a_turn_over_the_limit_fills_the_run_budget_with_its_first_calls_only(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    """Only the calls that run count against `max_tool_calls`: 6 asked, 4 run, budget 4."""
    ran: list[int] = []
    config = AgentConfig(
        model=write_script(tmp_path, [wide_turn(6), answer("done")]),
        limits=Limits(max_tool_calls=4, max_tool_calls_per_turn=4),
    )
    async with running_worker(client, counting_registry(ran), task_queue):
        run = await DurableTools(client, task_queue).start("exact", config=config)
        result = await run.result()
    assert result.status == RunStatus.COMPLETED and len(ran) == 4


async def test_on_invalid_call_fail_still_ends_the_run_at_the_turn_limit(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    ran: list[int] = []
    config = AgentConfig(
        model=write_script(tmp_path, [wide_turn(5), answer("done")]),
        limits=Limits(max_tool_calls_per_turn=4),
        on_invalid_call="fail",
    )
    async with running_worker(client, counting_registry(ran), task_queue):
        run = await DurableTools(client, task_queue).start("strict", config=config)
        result = await run.result()
    assert result.status == RunStatus.LIMIT_REACHED
    assert "max_tool_calls_per_turn is 4" in (result.reason or "")
    assert ran == []


async def test_thousands_of_calls_in_one_answer_end_the_run_without_wedging_it(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    """Past 256 calls over the limit the model is broken: repairing each would build a
    payload near Temporal's limit, so the run ends `limit_reached`, clearly."""
    ran: list[int] = []
    config = AgentConfig(
        model=write_script(tmp_path, [wide_turn(4 + 257), answer("done")]),
        limits=Limits(max_tool_calls_per_turn=4),
    )
    async with running_worker(client, counting_registry(ran), task_queue):
        run = await DurableTools(client, task_queue).start("flood", config=config)
        result = await run.result()
        await assert_not_wedged(run.handle)
    assert result.status == RunStatus.LIMIT_REACHED
    assert "261 tool calls" in (result.reason or "") and ran == []


async def test_a_turn_limit_of_zero_refuses_every_call_and_the_run_goes_on(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    ran: list[int] = []
    config = AgentConfig(
        model=write_script(tmp_path, [wide_turn(2), answer("done")]),
        limits=Limits(max_tool_calls_per_turn=0),
    )
    async with running_worker(client, counting_registry(ran), task_queue):
        run = await DurableTools(client, task_queue).start("none", config=config)
        result = await run.result()
        replies = [m for m in await run.conversation() if m.role == "tool"]
    assert result.status == RunStatus.COMPLETED and ran == []
    assert [m.is_error for m in replies] == [True, True]
    assert "at most 0 run per turn" in (replies[0].content or "")
