"""MCP elicitation as a durable pause, end to end on the dev server.

The server (`mcp_elicit_server.py`, the official SDK's `MCPServer` over stdio) asks the
user a question the 2026-07-28 way: its `tools/call` answers "input required". The tool
activity completes with the question, the run waits durably (`status().pending_inputs`),
the user answers with `answer_input` (Python) or `durable-tools answer` (CLI), and the run
calls the tool again with the answer; the model reads what the server made of it.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from cli_support import cli, cli_env  # noqa: F401  (a fixture)
from durable_tools import (
    AgentRun,
    DurableTools,
    InputAnswerRejected,
    RunStatus,
    ToolRegistry,
    answer_input,
)
from durable_tools.sources import McpPool, McpStdio, attach_mcp
from durable_tools.workflows import RunSnapshot
from support import answer, assert_not_wedged, calls, running_worker, wait_for, write_script

SERVER = str(Path(__file__).with_name("mcp_elicit_server.py"))
GREET = ("g1", "ask__greet", {"greeting": "hello"})


@pytest.fixture
async def pool() -> AsyncIterator[McpPool]:
    pool = McpPool(connect_timeout=20)
    yield pool
    await pool.aclose()


async def registry_for(pool: McpPool, key: str | None = None, **options: Any) -> ToolRegistry:
    registry = ToolRegistry()
    env = {"ELICIT_STATE_KEY": key} if key else {}
    server = McpStdio(sys.executable, (SERVER,), env=env, name="ask", elicitation=True)
    await attach_mcp(registry, server, pool=pool, **options)
    return registry


def waiting(snapshot: RunSnapshot) -> bool:
    return bool(snapshot.pending_inputs)


async def start(client: Client, task_queue: str, tmp_path: Path) -> AgentRun:
    tools = DurableTools(client, task_queue)
    return await tools.start("greet", model=write_script(tmp_path, [calls(GREET), answer("ok")]))


async def tool_reply(run: AgentRun) -> str:
    replies = [m.content or "" for m in await run.conversation() if m.role == "tool"]
    assert len(replies) == 1, replies
    return replies[0]


async def test_a_question_pauses_the_run_and_an_accepted_answer_resumes_the_call(
    client: Client, task_queue: str, tmp_path: Path, pool: McpPool
) -> None:
    registry = await registry_for(pool)
    async with running_worker(client, registry, task_queue):
        run = await start(client, task_queue, tmp_path)
        paused = await wait_for(run, waiting, timeout=30)
        [pending] = paused.pending_inputs
        assert pending.call_id == "g1" and pending.tool == "ask__greet"
        [question] = pending.questions
        assert question.message == "Whom should I greet?"
        assert question.requested_schema["properties"]["name"]["type"] == "string"
        assert "g1" not in paused.running_tools  # waiting for a person, not running

        assert await answer_input(run, "g1", "accept", {"name": "Ada", "times": 2}) == "accepted"
        result = await run.result()
        assert result.status == RunStatus.COMPLETED
        # The server resumed the call with the answer: the model reads its result.
        assert await tool_reply(run) == "hello Ada! hello Ada!"
        events = [e.event for e in await run.events() if e.event.startswith("input.")]
        assert events == ["input.requested", "input.answered"]
        [record] = await run.timeline()
        assert record.status == "completed"
        await assert_not_wedged(run.handle)


async def test_a_declined_question_is_passed_to_the_server(
    client: Client, task_queue: str, tmp_path: Path, pool: McpPool
) -> None:
    registry = await registry_for(pool)
    async with running_worker(client, registry, task_queue):
        run = await start(client, task_queue, tmp_path)
        await wait_for(run, waiting, timeout=30)
        await answer_input(run.handle, "g1", "decline")
        assert (await run.result()).status == RunStatus.COMPLETED
        assert await tool_reply(run) == "nobody to greet (the user chose decline)"
        await assert_not_wedged(run.handle)


async def test_an_unanswered_question_ends_at_the_tools_deadline(
    client: Client, task_queue: str, tmp_path: Path, pool: McpPool
) -> None:
    registry = await registry_for(pool, schedule_to_close_timeout=3)
    async with running_worker(client, registry, task_queue):
        run = await start(client, task_queue, tmp_path)
        paused = await wait_for(run, waiting, timeout=30)
        assert paused.pending_inputs[0].deadline is not None
        assert (await run.result()).status == RunStatus.COMPLETED
        reply = await tool_reply(run)
        assert "the user did not answer the MCP server's question within 3s" in reply
        assert not (await run.status()).pending_inputs
        events = [e.event for e in await run.events() if e.event.startswith("input.")]
        assert events == ["input.requested", "input.expired"]
        await assert_not_wedged(run.handle)


async def test_cancelling_the_run_ends_the_wait(
    client: Client, task_queue: str, tmp_path: Path, pool: McpPool
) -> None:
    registry = await registry_for(pool)
    async with running_worker(client, registry, task_queue):
        run = await start(client, task_queue, tmp_path)
        await wait_for(run, waiting, timeout=30)
        await run.handle.signal("cancel", "not needed")
        assert (await run.result()).status == RunStatus.CANCELLED
        [record] = await run.timeline()
        await assert_not_wedged(run.handle)
    assert record.status == "cancelled"  # not left "awaiting_input" for ever


@pytest.mark.parametrize(
    ("call_id", "action", "content", "why"),
    [
        ("g1", "accept", {"name": 5}, "does not match the requested schema at name"),
        ("g1", "accept", {"times": 2}, "'name' is a required property"),
        ("g1", "accept", None, "an accept answer needs content"),
        ("g1", "maybe", None, "action must be one of"),
        ("g1", "decline", {"name": "Ada"}, "a decline answer carries no content"),
        ("nope", "accept", {"name": "Ada"}, "no question is waiting"),
        (None, "cancel", None, "a call id must be text"),
        ("g1", "accept", {"name": "x" * 2_000_000}, ""),
    ],
)
async def test_a_bad_answer_is_refused_and_the_question_keeps_waiting(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    pool: McpPool,
    call_id: Any,
    action: Any,
    content: Any,
    why: str,
) -> None:
    registry = await registry_for(pool)
    async with running_worker(client, registry, task_queue):
        run = await start(client, task_queue, tmp_path)
        await wait_for(run, waiting, timeout=30)
        with pytest.raises(Exception) as refused:
            await answer_input(run, call_id, action, content)
        # The 2 MB answer is refused by the server's payload limit or the run's own.
        if why:
            assert isinstance(refused.value, InputAnswerRejected)
            assert why in str(refused.value)
        assert (await run.status()).pending_inputs  # still waiting, nothing recorded
        await answer_input(run, "g1", "accept", {"name": "Bo"})
        assert (await run.result()).status == RunStatus.COMPLETED
        assert await tool_reply(run) == "hello Bo!"
        await assert_not_wedged(run.handle)
        history = await run.handle.fetch_history()
        # Refused updates never enter history: one accepted update only.
        accepted = [
            e
            for e in history.events
            if e.HasField("workflow_execution_update_accepted_event_attributes")
        ]
        assert len(accepted) == 1


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        # The server seals its question's state with a stable key: the call resumes.
        ("a stable key shared by the server's restarts", "hello Cy!"),
        # A per-process key (the SDK's default): the restarted server cannot read the
        # state; the model reads why, and nothing hangs.
        (None, "could not take the user's answer: Invalid or expired requestState"),
    ],
)
@pytest.mark.slow
async def test_an_answer_after_a_worker_restart(
    client: Client, task_queue: str, tmp_path: Path, pool: McpPool, key: str | None, expected: str
) -> None:
    async with running_worker(client, await registry_for(pool, key), task_queue):
        run = await start(client, task_queue, tmp_path)
        await wait_for(run, waiting, timeout=30)
    await pool.aclose()  # the old worker and its MCP server process are gone

    fresh = McpPool(connect_timeout=20)
    try:
        async with running_worker(client, await registry_for(fresh, key), task_queue):
            await answer_input(run, "g1", "accept", {"name": "Cy"})
            assert (await run.result()).status == RunStatus.COMPLETED
            assert expected in await tool_reply(run)
            await assert_not_wedged(run.handle)
    finally:
        await fresh.aclose()


async def test_the_cli_shows_the_question_and_answers_it(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    pool: McpPool,
    cli_env: str,  # noqa: F811
    capsys: Any,
) -> None:
    registry = await registry_for(pool)
    async with running_worker(client, registry, task_queue):
        run = await start(client, task_queue, tmp_path)
        await wait_for(run, waiting, timeout=30)
        code, out, err = await cli(capsys, "show", run.run_id)
        assert code == 0, err
        assert "call g1 (ask__greet) asks the user:" in out
        assert "Whom should I greet?" in out and "name: string" in out
        assert f"durable-tools answer {run.run_id} g1 --accept" in out

        code, out, err = await cli(capsys, "answer", run.run_id, "g1", "--accept", '{"name": 1}')
        assert code != 0 and "does not match the requested schema" in err
        code, out, err = await cli(capsys, "answer", run.run_id, "g1", "--accept", '{"name": "Di"}')
        assert code == 0, err
        assert "accepted" in out
        assert (await run.result()).status == RunStatus.COMPLETED
        assert await tool_reply(run) == "hello Di!"
        await assert_not_wedged(run.handle)
