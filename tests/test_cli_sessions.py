"""`durable-tools send` and `close` against a real dev server and worker."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import Client

import cli_support
from cli_support import cli
from durable_tools.client import DurableTools
from durable_tools.tools import ToolRegistry
from durable_tools.workflows import AgentConfig, RunStatus, SessionConfig
from support import answer, calls, running_worker, wait_for, write_script

cli_env = cli_support.cli_env  # the fixture, by the name the tests ask for


def lookup_registry() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    def lookup(q: str) -> str:
        """Look something up."""
        return f"found {q}"

    return registry


async def test_send_prints_the_answer_and_close_ends_the_session(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    cli_env: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    model = write_script(
        tmp_path,
        [answer("hello"), calls(("c1", "lookup", {"q": "x"})), answer("x is found"), answer("ok")],
    )
    tools = DurableTools(client, task_queue)
    async with running_worker(client, lookup_registry(), task_queue):
        run = await tools.start("hi", config=AgentConfig(model=model, session=SessionConfig()))
        plain = await tools.start(
            "hi", config=AgentConfig(model=write_script(tmp_path, [answer("a")]))
        )
        await wait_for(run, lambda s: s.status == RunStatus.AWAITING_MESSAGE)
        waiting = await cli(capsys, "pending")
        sent = await cli(capsys, "send", run.run_id, "look up x")
        blank = await cli(capsys, "send", run.run_id, "   ")
        no_wait = await cli(
            capsys, "send", run.run_id, "thanks", "--no-wait", "--message-id", "m-3"
        )
        third = await run.message("m-3").result()
        closed = await cli(capsys, "close", run.run_id, "--reason", "bye")
        result = await run.result()
        again = await cli(capsys, "send", run.run_id, "more")
        await plain.result()
        not_session = await cli(capsys, "send", plain.run_id, "hello")
    assert waiting[0] == 0 and f"durable-tools send {run.run_id}" in waiting[1], waiting
    assert sent[0] == 0 and sent[1].strip() == "x is found", sent
    assert blank[0] == 2 and "non-empty" in blank[2], blank
    assert no_wait[0] == 0 and "message m-3 taken" in no_wait[1], no_wait
    assert third.answer == "ok"
    assert closed[0] == 0 and f"session {run.run_id}: closed" in closed[1], closed
    assert result.reason == "session closed: bye"
    assert again[0] == 2 and "has ended" in again[2], again
    assert not_session[0] == 2 and "has ended" in not_session[2], not_session


async def test_send_to_a_running_run_that_is_no_session(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    cli_env: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    registry = ToolRegistry()

    @registry.tool(approval=True)
    def pay(amount_cents: int) -> str:
        """Pay (needs approval)."""
        return "paid"

    model = write_script(tmp_path, [calls(("p", "pay", {"amount_cents": 1})), answer("done")])
    tools = DurableTools(client, task_queue)
    async with running_worker(client, registry, task_queue):
        run = await tools.start("pay", config=AgentConfig(model=model))
        await wait_for(run, lambda s: bool(s.pending_approvals))
        refused = await cli(capsys, "send", run.run_id, "hello")
        close = await cli(capsys, "close", run.run_id)
        await run.cancel("test over")
        await run.result()
    assert refused[0] == 2 and "is not a session" in refused[2], refused
    assert close[0] == 2 and "is not a session" in close[2], close
