"""`durable-tools send`, `close` and `run --session` against a real dev server and worker."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

import cli_support
from cli_support import cli, run_exists, start_input, usage_error
from durable_tools import AgentConfig, DurableTools, RunStatus, SessionConfig, ToolRegistry
from fake_openai import FakeOpenAIServer, RecordedRequest, chat_completion
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


def recalling_model(request: RecordedRequest) -> dict[str, Any]:
    """An OpenAI-compatible model that answers with every user message it was sent."""
    said = [m["content"] for m in request.json["messages"] if m["role"] == "user"]
    return chat_completion(content="heard: " + " | ".join(said))


async def test_run_session_then_send_twice_answers_in_one_conversation(
    client: Client,
    task_queue: str,
    cli_env: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    session_id = f"chat-{uuid.uuid4().hex[:8]}"
    with FakeOpenAIServer(recalling_model) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        async with running_worker(client, lookup_registry(), task_queue):
            started = await cli(
                capsys,
                *("run", "my name is Ada", "--session", session_id, "--wait"),
                *("--model", "openai:gpt-test", "--idle-timeout", "3600"),
            )
            second = await cli(capsys, "send", session_id, "what is my name?")
            third = await cli(capsys, "send", session_id, "and again?")
            status = await DurableTools(client).run(session_id).status()
            closed = await cli(capsys, "close", session_id)
            # Without --wait: started with the prompt as message 1, answered meanwhile.
            other = f"chat-{uuid.uuid4().hex[:8]}"
            quick = await cli(
                capsys,
                *("run", "I am Bo", "--session", "--id", other),
                *("--model", "openai:gpt-test", "--json"),
            )
            awaiting = RunStatus.AWAITING_MESSAGE
            await wait_for(DurableTools(client).run(other), lambda s: s.status == awaiting)
            after = await cli(capsys, "send", other, "who am I?")
            await cli(capsys, "close", other)
    assert started[0] == 0, started
    assert json.loads(quick[1]) == {
        "run_id": other,
        "ui_url": json.loads(quick[1])["ui_url"],
        "task_queue": task_queue,
        "session": True,
    }, quick
    assert after == (0, "heard: I am Bo | who am I?\n", ""), after
    assert "heard: my name is Ada" in started[1], started
    assert f'durable-tools send {session_id} "..."' in started[1], started
    assert second == (0, "heard: my name is Ada | what is my name?\n", ""), second
    assert third[0] == 0 and third[1].strip().endswith("what is my name? | and again?"), third
    assert status.session is not None and status.session.messages == 3
    assert closed[0] == 0, closed


async def test_send_with_model_starts_the_session_and_without_says_how(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    cli_env: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    session_id = f"new-{uuid.uuid4().hex[:8]}"
    model = write_script(tmp_path, [answer("hello there"), answer("second answer")])
    missing = await cli(capsys, "send", session_id, "hi")
    async with running_worker(client, lookup_registry(), task_queue):
        first = await cli(
            capsys,
            *("send", session_id, "hi", "--model", model, "--name", "greeter"),
            *("--idle-timeout", "600", "--user", "ada"),
        )
        # Running already: the same command sends (its start flags are not used again).
        second = await cli(capsys, "send", session_id, "more", "--model", model)
        run = DurableTools(client).run(session_id)
        config = await start_input(client, session_id)
        closed = await cli(capsys, "close", session_id)
        await run.result()
        ended = await cli(capsys, "send", session_id, "again", "--model", model)
        hostile = f"\x1b]52;c;x\x07{session_id}"  # an id a terminal would act on
        as_json = await cli(
            capsys, "run", "hi", "--session", hostile, "--model", model, "--wait", "--json"
        )
        await cli(capsys, "close", hostile)
    assert missing[0] == 2 and missing[1] == "", missing
    assert missing[2].count("\n") == 1, missing  # one line
    assert f"no session {session_id}" in missing[2], missing
    assert f"durable-tools send {session_id} TEXT --model SPEC" in missing[2], missing
    assert first == (0, "hello there\n", ""), first
    assert second == (0, "second answer\n", ""), second
    assert config.config.name == "greeter" and config.identity.user == "ada"
    assert config.config.session is not None
    assert config.config.session.idle_timeout_seconds == 600
    assert closed[0] == 0, closed
    assert ended[0] == 2 and "has ended" in ended[2], ended
    assert as_json[0] == 0, as_json
    reply = json.loads(as_json[1])
    assert (reply["run_id"], reply["message"], reply["status"]) == (hostile, 1, "awaiting_message")
    assert reply["answer"] == "hello there", reply
    assert "\x1b" not in as_json[2] and "started session \\x1b]52" in as_json[2], as_json


async def test_send_refuses_start_flags_without_model_and_bad_values_start_nothing(
    client: Client, tmp_path: Path, cli_env: str, capsys: pytest.CaptureFixture[str]
) -> None:
    session_id = f"bad-{uuid.uuid4().hex[:8]}"
    model = write_script(tmp_path, [answer("x")])
    refused = [
        await cli(capsys, "send", session_id, "hi", "--instructions", "be brief"),
        await cli(capsys, "send", session_id, "hi", "--idle-timeout", "60"),
        await usage_error(
            capsys, "send", session_id, "hi", "--model", model, "--idle-timeout", "nan"
        ),
        await usage_error(
            capsys, "send", session_id, "hi", "--model", model, "--idle-timeout", "-1"
        ),
        await cli(capsys, "send", session_id, "hi", "--model", model, "--prefix", "agent_"),
        await cli(capsys, "send", session_id, "hi", "--model", "nosuch:m"),
        await cli(capsys, "run", "hi", "--model", model, "--session", session_id, "--id", "x"),
        await cli(capsys, "run", "--session", "what did acc-1 spend?", "--model", model),
        await cli(capsys, "run", "hi", "--model", model, "--id", session_id, "--idle-timeout", "9"),
    ]
    assert all(code == 2 for code, _, _ in refused), refused
    assert "--instructions shape a session" in refused[0][2]
    assert "--idle-timeout shape a session" in refused[1][2]
    assert "argument --idle-timeout" in refused[2][2] and "argument --idle-timeout" in refused[3][2]
    assert "cannot start: drop --model" in refused[4][2]
    assert "unknown model provider 'nosuch'" in refused[5][2]
    assert "name two runs" in refused[6][2]
    assert "took 'what did acc-1 spend?' as the session's id" in refused[7][2]
    assert "--idle-timeout is a session's: add --session" in refused[8][2]
    assert not await run_exists(client, session_id)
    assert not await run_exists(client, "what did acc-1 spend?")


async def test_send_to_a_session_that_fails_while_answering_says_why_without_a_traceback(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    cli_env: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    model = write_script(tmp_path, [answer("hello")])
    tools = DurableTools(client, task_queue)
    async with running_worker(client, lookup_registry(), task_queue):
        run = await tools.start("hi", config=AgentConfig(model=model, session=SessionConfig()))
        await wait_for(run, lambda s: s.status == RunStatus.AWAITING_MESSAGE)
        Path(model.split(":", 1)[1]).unlink()  # the model's next call fails for good
        sent = await cli(capsys, "send", run.run_id, "more")
    assert sent[0] == 1, sent
    assert "session failed while answering message 2" in sent[2], sent
    assert "file not found" in sent[2] and "Traceback" not in sent[2], sent
