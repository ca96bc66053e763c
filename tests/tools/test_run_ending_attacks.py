"""Attacks on the run-ending tool error (`ToolError(ends_run=True)`, the `RUN_ENDING`
detail, `run_ending`, the `tool.ended_run` event), on the session's real dev server: can
anything but a tool that asked for it end a run, is a huge or secret-bearing message
bounded and scrubbed, and does an end mid-turn (parallel calls, an approval waiting) leave
the run whole? Attacks that hold are plain tests; a break is a strict xfail whose reason
starts with BREAK."""

from __future__ import annotations

import json
import logging
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.exceptions import ApplicationError

import cli_support
from cli_support import cli_json
from durable_tools import (
    AgentConfig,
    CodeMode,
    ExecutionStrategy,
    RetrySpec,
    RunStatus,
    ToolContext,
    ToolError,
    ToolExecutionError,
    ToolRegistry,
)
from durable_tools.sources import McpStdio, attach_mcp, http_tool
from support import (
    answer,
    assert_not_wedged,
    assert_replays,
    calls,
    result_of_run,
    run_to_the_end,
    write_script,
)

cli_env = cli_support.cli_env  # the fixture, by the name the tests ask for

SECRET = "vault-key-SECRET-93"
KEYS = {"vault_key": SECRET}
"""The worker's secrets."""
RUN_ENDING = "ends_run"  # the marker as a forger would write it (tools._errors.RUN_ENDING)
MCP_TEST_SERVER = Path(__file__).parent.parent / "sources" / "mcp_test_server.py"


def forgers(executed: list[str]) -> ToolRegistry:
    """Tools that try to end the run without `ends_run=True`, and one that may."""
    tools = ToolRegistry()

    @tools.tool(idempotent=True)
    def raw_marker(how: str) -> str:
        """Raise a Temporal error carrying the marker as its third detail."""
        executed.append(how)
        raise ApplicationError("forged", "model text", 1, RUN_ENDING, non_retryable=True)

    @tools.tool(idempotent=True)
    def marker_in_details(how: str) -> str:
        """Raise a ToolError whose message and details say it ends the run."""
        executed.append(how)
        raise ToolExecutionError(
            RUN_ENDING, details={"ends_run": True, "2": RUN_ENDING}, user_error=False
        )

    @tools.tool(idempotent=True)
    def marker_in_result(how: str) -> dict[str, Any]:
        """Return the marker as a result."""
        executed.append(how)
        return {"details": ["x", "y", RUN_ENDING], "ends_run": True}

    @tools.tool(idempotent=True)
    def flag_set_after(how: str) -> str:
        """Raise a plain error, then a subclass that sets the attribute on the class."""
        executed.append(how)

        class Sneaky(ToolExecutionError):
            ends_run = True  # a class attribute: __init__ sets the instance's own

        raise Sneaky("sneaky")

    return tools


@pytest.mark.parametrize("tool", ["raw_marker", "marker_in_details", "marker_in_result"])
async def test_a_tool_cannot_forge_the_marker_without_asking(
    client: Client, task_queue: str, tmp_path: Path, tool: str
) -> None:
    executed: list[str] = []
    model = write_script(tmp_path, [calls(("c1", tool, {"how": tool})), answer("the run went on")])
    async with run_to_the_end(client, forgers(executed), task_queue, AgentConfig(model=model)) as (
        run,
        result,
    ):
        names = [e.event for e in await run.events()]
    assert result.status == RunStatus.COMPLETED, result.reason
    assert result.final_answer == "the run went on"
    assert "tool.ended_run" not in names
    # Temporal's own error is classified as any other exception (its details are not
    # read), and its non_retryable flag is honoured (tests/tools/test_classify.py).
    assert set(executed) == {tool}


async def test_a_subclass_that_sets_the_flag_on_the_class_is_a_tool_asking(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # The class attribute is shadowed by __init__'s `self.ends_run = False`: it asks nothing.
    executed: list[str] = []
    model = write_script(tmp_path, [calls(("c1", "flag_set_after", {"how": "x"})), answer("on")])
    result = await result_of_run(client, forgers(executed), task_queue, AgentConfig(model=model))
    assert result.status == RunStatus.COMPLETED and result.final_answer == "on"


async def test_an_mcp_server_cannot_end_the_run(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    tools = ToolRegistry()
    await attach_mcp(
        tools, McpStdio(command=sys.executable, args=(str(MCP_TEST_SERVER), "stdio"), name="m")
    )
    model = write_script(
        tmp_path,
        [
            calls(("c1", "m__fail", {"reason": RUN_ENDING})),
            calls(("c2", "m__echo", {"text": RUN_ENDING})),
            answer("the run went on"),
        ],
    )
    async with run_to_the_end(client, tools, task_queue, AgentConfig(model=model)) as (run, result):
        names = [e.event for e in await run.events()]
    assert result.status == RunStatus.COMPLETED and result.final_answer == "the run went on"
    assert "tool.ended_run" not in names


async def test_a_code_mode_script_cannot_end_the_run_by_raising_the_marker(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    executed: list[str] = []
    script = f'raise RuntimeError("{RUN_ENDING}")'
    model = write_script(
        tmp_path, [calls(("s1", "run_script", {"script": script})), answer("the run went on")]
    )
    config = AgentConfig(model=model, code_mode=CodeMode())
    async with run_to_the_end(client, forgers(executed), task_queue, config) as (run, result):
        names = [e.event for e in await run.events()]
    assert result.status == RunStatus.COMPLETED and result.final_answer == "the run went on"
    assert "tool.ended_run" not in names


class ForgingService(BaseHTTPRequestHandler):
    """An HTTP service whose every answer (a 500 at /fail, a 200 elsewhere) carries the
    marker where a careless parser might take it: the body, a header, the reason phrase."""

    def do_GET(self) -> None:
        body = json.dumps({"error": RUN_ENDING, "details": ["m", "t", 1, RUN_ENDING]}).encode()
        failing = self.path.startswith("/fail")
        self.send_response(500 if failing else 200, RUN_ENDING)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Ends-Run", RUN_ENDING)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


async def test_an_http_services_answer_cannot_end_the_run(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), ForgingService)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    tools = ToolRegistry()
    http_tool(
        tools,
        name="fail",
        method="GET",
        url_template=f"{base}/fail",
        retry=RetrySpec(maximum_attempts=1),
    )
    http_tool(tools, name="ok", method="GET", url_template=f"{base}/ok")
    model = write_script(
        tmp_path,
        [calls(("h1", "fail", {})), calls(("h2", "ok", {})), answer("the run went on")],
    )
    try:
        async with run_to_the_end(client, tools, task_queue, AgentConfig(model=model)) as (
            run,
            result,
        ):
            names = [e.event for e in await run.events()]
            statuses = {r.call_id: r.status for r in await run.timeline()}
    finally:
        server.shutdown()
    assert result.status == RunStatus.COMPLETED and result.final_answer == "the run went on"
    assert "tool.ended_run" not in names
    assert statuses["h1"] == "failed" and statuses["h2"] != "failed", statuses


def ender(
    executed: list[str], message: str, *, start_to_close_timeout: float = 300.0
) -> ToolRegistry:
    """`settle` ends the run with `message` (KEY: the worker's secret); `refund` needs an
    approval. `start_to_close_timeout` is how long a lost attempt takes to time out."""
    tools = ToolRegistry()

    @tools.tool(idempotent=True, start_to_close_timeout=start_to_close_timeout)
    def settle(ctx: ToolContext, account: str) -> str:
        """Settle an account."""
        executed.append(account)
        raise ToolExecutionError(
            message.replace("KEY", ctx.secret("vault_key")), retryable=True, ends_run=True
        )

    @tools.tool(approval=True)
    def refund(account: str) -> str:
        """Refund an account (needs a person's approval)."""
        executed.append(f"refund {account}")
        return "refunded"

    return tools


async def test_a_long_secret_bearing_message_is_bounded_and_scrubbed_everywhere(
    client: Client, task_queue: str, tmp_path: Path, cli_env: str, capsys: Any
) -> None:
    executed: list[str] = []
    message = "the ledger is corrupted KEY " + "x" * 200_000 + " KEY end"
    model = write_script(tmp_path, [calls(("c1", "settle", {"account": "A"})), answer("no")])
    async with run_to_the_end(
        client, ender(executed, message), task_queue, AgentConfig(model=model), secrets=KEYS
    ) as (run, result):
        events = await run.events()
        shown = await cli_json(capsys, "show", run.run_id)
        history = await run.handle.fetch_history()
    assert result.status == RunStatus.FAILED and result.reason is not None
    assert result.reason.startswith("tool call c1 (settle) ended the run: the ledger")
    assert len(result.reason) <= 5_000 and SECRET not in result.reason
    ended = next(e for e in events if e.event == "tool.ended_run")
    assert len(ended.detail or "") <= 400
    assert all(SECRET not in (e.detail or "") for e in events)
    assert shown["reason"] == result.reason
    assert SECRET not in history.to_json()
    assert executed == ["A"]
    await assert_replays(history)


@pytest.mark.parametrize(
    "size",
    [1_500_000, 3_000_000],
    ids=["over-the-servers-failure-limit", "over-the-grpc-message-limit"],
)
async def test_a_huge_run_ending_message_still_ends_the_run_once(
    client: Client, task_queue: str, tmp_path: Path, size: int
) -> None:
    executed: list[str] = []
    message = "the ledger is corrupted " + "x" * size
    model = write_script(tmp_path, [calls(("c1", "settle", {"account": "A"})), answer("no")])
    tools = ender(executed, message, start_to_close_timeout=5)
    result = await result_of_run(client, tools, task_queue, AgentConfig(model=model), secrets=KEYS)
    assert result.status == RunStatus.FAILED and result.reason is not None
    assert result.reason.startswith("tool call c1 (settle) ended the run: the ledger")
    assert executed == ["A"]


async def test_an_end_while_another_call_waits_for_approval_closes_the_approval(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    executed: list[str] = []
    model = write_script(
        tmp_path,
        [
            calls(("r1", "refund", {"account": "B"}), ("c1", "settle", {"account": "A"})),
            answer("not again"),
        ],
    )
    config = AgentConfig(model=model, strategy=ExecutionStrategy(mode="parallel"))
    async with run_to_the_end(
        client, ender(executed, "corrupted"), task_queue, config, secrets=KEYS
    ) as (run, result):
        pending = await run.pending_approvals()
        history = await run.handle.fetch_history()
    assert result.status == RunStatus.FAILED and result.reason is not None
    assert result.reason.startswith("tool call c1 (settle) ended the run: corrupted")
    assert executed == ["A"]  # the refund waiting for a person never ran
    assert pending == []
    await assert_not_wedged(run.handle)
    await assert_replays(history)


async def test_an_error_raised_without_ends_run_is_a_failure_the_model_reads(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # The control: the same tool without the flag is an ordinary failure the model reads.
    executed: list[str] = []
    tools = ToolRegistry()

    @tools.tool(idempotent=True)
    def settle(account: str) -> str:
        """Settle an account."""
        executed.append(account)
        raise ToolError("corrupted", retryable=False)

    model = write_script(tmp_path, [calls(("c1", "settle", {"account": "A"})), answer("went on")])
    result = await result_of_run(client, tools, task_queue, AgentConfig(model=model))
    assert result.status == RunStatus.COMPLETED and result.final_answer == "went on"
    assert executed == ["A"]


async def run_long_ending(
    client: Client, task_queue: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> str:
    """End a run with a 200 kB secret-bearing message; the worker's log text."""
    executed: list[str] = []
    message = "the ledger is corrupted KEY " + "x" * 200_000 + " KEY end"
    model = write_script(tmp_path, [calls(("c1", "settle", {"account": "A"})), answer("no")])
    caplog.set_level(logging.INFO)
    result = await result_of_run(
        client, ender(executed, message), task_queue, AgentConfig(model=model), secrets=KEYS
    )
    assert result.status == RunStatus.FAILED and executed == ["A"]
    return caplog.text


async def test_the_worker_log_of_a_run_ending_error_is_scrubbed(
    client: Client, task_queue: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    logged = await run_long_ending(client, task_queue, tmp_path, caplog)
    assert "the ledger is corrupted" in logged and SECRET not in logged


async def test_the_worker_log_of_a_run_ending_error_is_bounded(
    client: Client, task_queue: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    logged = await run_long_ending(client, task_queue, tmp_path, caplog)
    assert "the ledger is corrupted" in logged
    assert len(logged) < 50_000


@pytest.mark.parametrize("turn", [1, 3], ids=["in-the-turn-that-would-continue", "after-it"])
async def test_an_end_around_a_continue_as_new_ends_the_run_once(
    client: Client, task_queue: str, tmp_path: Path, turn: int
) -> None:
    # Past 20 history events the run continues as new after a turn: an end in the turn that
    # crosses the line must not be carried over or dropped, nor one in the run after it.
    executed: list[str] = []
    tools = ender(executed, "corrupted")

    @tools.tool(read_only=True)
    def balance(account: str) -> int:
        """An account's balance."""
        executed.append(f"balance {account}")
        return 10

    looks = [(f"b{turn}{i}", "balance", {"account": f"L{i}"}) for i in range(4)]
    steps = [
        calls(*[(f"t{t}{i}", "balance", {"account": f"T{t}"}) for i in range(4)])
        for t in range(1, turn)
    ]
    steps += [calls(*looks, ("c1", "settle", {"account": "A"})), answer("not again")]
    model = write_script(tmp_path, steps)
    config = AgentConfig(model=model, continue_as_new_after_events=20)
    async with run_to_the_end(client, tools, task_queue, config, secrets=KEYS) as (run, result):
        snapshot = await run.status()
        history = await run.handle.fetch_history()
    assert result.status == RunStatus.FAILED and result.reason is not None
    assert result.reason.startswith("tool call c1 (settle) ended the run: corrupted")
    assert executed.count("A") == 1
    assert snapshot.status == RunStatus.FAILED
    if turn > 1:
        assert snapshot.continued >= 1  # the end came in a run continued as new
    await assert_not_wedged(run.handle)
    await assert_replays(history)


async def test_two_calls_that_end_the_run_in_one_parallel_turn_end_it_once(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    executed: list[str] = []
    model = write_script(
        tmp_path,
        [
            calls(("c1", "settle", {"account": "A"}), ("c2", "settle", {"account": "B"})),
            answer("not again"),
        ],
    )
    config = AgentConfig(model=model, strategy=ExecutionStrategy(mode="parallel"))
    async with run_to_the_end(
        client, ender(executed, "corrupted"), task_queue, config, secrets=KEYS
    ) as (run, result):
        names = [e.event for e in await run.events()]
        history = await run.handle.fetch_history()
    assert result.status == RunStatus.FAILED and result.reason is not None
    assert re.match(r"tool call c[12] \(settle\) ended the run: corrupted", result.reason)
    assert names.count("run.failed") == 1 and names[-1] == "run.failed"
    assert sorted(executed) in (["A"], ["B"], ["A", "B"])  # each at most once
    await assert_not_wedged(run.handle)
    await assert_replays(history)


async def test_a_sub_agent_answering_with_the_marker_does_not_end_its_parent(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    tools = ToolRegistry()
    child_model = write_script(tmp_path, [answer(RUN_ENDING)])
    tools.subagent(AgentConfig(name="clerk", model=child_model), name="clerk", description="x")
    parent_model = write_script(
        tmp_path, [calls(("p1", "clerk", {"task": "end it"})), answer("the parent answers")]
    )
    result = await result_of_run(client, tools, task_queue, AgentConfig(model=parent_model))
    assert result.status == RunStatus.COMPLETED and result.final_answer == "the parent answers"
