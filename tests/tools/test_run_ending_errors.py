"""A tool error that ends the run, not only the call (`ToolError(ends_run=True)`): the run
fails naming the tool and the call, the audit stream says so, nothing is retried, and the
model is not asked what to do next. On the session's real dev server, in a direct call,
in a code-mode script's host call and in a sub-agent."""

from __future__ import annotations

import base64
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowHistory
from temporalio.exceptions import ApplicationError

import cli_support
from cli_support import cli_json
from durable_tools import (
    AgentConfig,
    AgentResult,
    AgentRun,
    CodeMode,
    ExecutionStrategy,
    RunStatus,
    ToolContext,
    ToolError,
    ToolExecutionError,
    ToolRegistry,
)
from durable_tools._activities._tools import to_application_error
from durable_tools.protocol._limits import MAX_TOOL_ERROR_CHARS
from durable_tools.workflows.script._run import UNAWAITED_END_PATCH
from support import (
    answer,
    assert_not_wedged,
    assert_replays,
    calls,
    run_to_the_end,
    write_script,
)

cli_env = cli_support.cli_env  # the fixture, by the name the tests ask for

SECRET = "ledger-key-SECRET-77"
KEYS = {"ledger_key": SECRET}
"""The worker's secrets."""


def test_an_error_that_ends_the_run_is_never_retryable() -> None:
    error = ToolExecutionError("the ledger is corrupted", retryable=True, ends_run=True)
    assert error.ends_run and not error.is_retryable()
    error.retryable = True  # set after the fact: still never retried by the engine
    failure = to_application_error(error, "c1", "settle", [], retryable=True)
    assert failure.non_retryable and failure.details[2] == "ends_run"
    plain = to_application_error(ToolError("boom", retryable=True), "c1", "settle", [])
    assert not plain.non_retryable and len(plain.details) == 2  # the shape old runs know


def ledger(executed: list[str], slow: float = 0.0) -> ToolRegistry:
    tools = ToolRegistry()

    @tools.tool(idempotent=True, local=False)
    def settle(ctx: ToolContext, account: str) -> str:
        """Settle an account's balance."""
        executed.append(account)
        time.sleep(slow)  # lets a script's other call fail first
        key = ctx.secret("ledger_key")
        raise ToolExecutionError(
            f"the ledger of {account} is corrupted (checked with {key})",
            retryable=True,  # retryable as far as the tool knows: ending the run wins
            ends_run=True,
        )

    @tools.tool(read_only=True)
    def balance(account: str) -> int:
        """An account's balance."""
        executed.append(f"balance {account}")
        if account == "none":
            raise ToolExecutionError("no such account")
        return 10

    return tools


def assert_ended_by(events: list[Any], call_id: str) -> None:
    names = [e.event for e in events]
    assert names[-3:] == ["tool.failed", "tool.ended_run", "run.failed"], names
    ended = events[-2]
    assert (ended.call_id, ended.tool) == (call_id, "settle")
    assert "corrupted" in (ended.detail or "") and SECRET not in (ended.detail or "")
    assert "tool.retrying" not in names


async def test_a_tool_ends_the_run_naming_itself_and_the_call(
    client: Client, task_queue: str, tmp_path: Path, cli_env: str, capsys: Any
) -> None:
    executed: list[str] = []
    model = write_script(
        tmp_path,
        [
            calls(("c1", "settle", {"account": "A-9"})),
            answer("the model must not be asked again"),
        ],
    )
    async with run_to_the_end(
        client, ledger(executed), task_queue, AgentConfig(model=model), secrets=KEYS
    ) as (run, result):
        events = await run.events()
        timeline = await run.timeline()
        conversation = await run.conversation()
        shown = await cli_json(capsys, "show", run.run_id)
        history = await run.handle.fetch_history()
    assert result.status == RunStatus.FAILED and result.final_answer is None
    assert result.reason is not None
    assert result.reason.startswith("tool call c1 (settle) ended the run: the ledger of A-9")
    assert SECRET not in result.reason and "[redacted]" in result.reason
    assert executed == ["A-9"]  # once: neither the engine nor the workflow retried it
    assert [m.role for m in conversation if m.role == "assistant"] == ["assistant"]
    (record,) = timeline
    assert (record.call_id, record.status, record.attempts) == ("c1", "failed", 1)
    assert_ended_by(events, "c1")
    assert shown["status"] == "failed" and shown["reason"] == result.reason
    assert SECRET not in history.to_json()
    await assert_replays(history)


@dataclass
class ScriptRun:
    result: AgentResult
    events: list[Any]
    timeline: dict[str, Any]
    history: WorkflowHistory
    executed: list[str]


async def run_script(
    client: Client, task_queue: str, tmp_path: Path, script: str, *, slow: float = 0.0
) -> ScriptRun:
    """Run `script` as the model's one code-mode call, to the run's end."""
    executed: list[str] = []
    model = write_script(
        tmp_path, [calls(("s1", "run_script", {"script": script})), answer("not again")]
    )
    config = AgentConfig(model=model, code_mode=CodeMode())
    tools = ledger(executed, slow=slow)
    async with run_to_the_end(client, tools, task_queue, config, secrets=KEYS) as (run, result):
        events = await run.events()
        timeline = {r.call_id: r for r in await run.timeline()}
        history = await run.handle.fetch_history()
    await assert_replays(history)
    return ScriptRun(result, events, timeline, history, executed)


def marks_patch(history: WorkflowHistory, patch: str) -> bool:
    """Whether the history marks `patch` (its payloads decoded: JSON shows them base64)."""
    raw = history.to_json()
    found = re.findall(r'"data":\s*"([A-Za-z0-9+/=]+)"', raw)
    return any(patch.encode() in base64.b64decode(data) for data in found)


async def test_a_script_host_call_that_ends_the_run_ends_it(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    script = 'b = await balance(account="A-9")\nawait settle(account="A-9")\nb'
    ran = await run_script(client, task_queue, tmp_path, script)
    result, timeline = ran.result, ran.timeline
    assert result.status == RunStatus.FAILED and result.reason is not None
    host = next(r for r in timeline.values() if r.tool == "settle")
    assert result.reason.startswith(f"tool call {host.call_id} (settle) ended the run")
    assert ran.executed == ["balance A-9", "A-9"]
    assert host.status == "failed" and host.parent_call_id == "s1"
    assert timeline["s1"].status == "failed"  # the script's own call is closed, not running
    assert_ended_by(ran.events, host.call_id)
    assert not marks_patch(ran.history, UNAWAITED_END_PATCH)  # it was awaited


async def test_a_host_call_the_script_never_awaited_still_ends_the_run(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # The gather fails on the balance's error: the settle is left running, unawaited.
    script = 'import asyncio\nawait asyncio.gather(settle(account="A-9"), balance(account="none"))'
    ran = await run_script(client, task_queue, tmp_path, script, slow=1.0)
    assert sorted(ran.executed) == ["A-9", "balance none"]
    assert ran.result.status == RunStatus.FAILED and ran.result.final_answer is None
    assert ran.result.reason is not None and "(settle) ended the run" in ran.result.reason
    assert ran.timeline["s1"].status == "failed"
    assert marks_patch(ran.history, UNAWAITED_END_PATCH)


async def test_a_sub_agents_tool_ends_the_child_run_and_the_parent_is_told(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    executed: list[str] = []
    tools = ledger(executed)
    child_model = write_script(
        tmp_path, [calls(("k1", "settle", {"account": "B-2"})), answer("the child goes on")]
    )
    tools.subagent(
        AgentConfig(name="clerk", model=child_model), name="clerk", description="Settles."
    )
    parent_model = write_script(
        tmp_path, [calls(("p1", "clerk", {"task": "settle B-2"})), answer("the parent answers")]
    )
    async with run_to_the_end(
        client, tools, task_queue, AgentConfig(model=parent_model), secrets=KEYS
    ) as (run, result):
        child = AgentRun(client, f"{run.run_id}.p1")
        child_result = await child.result()
        child_events = await child.events()
        replies = [m.content or "" for m in await run.conversation() if m.role == "tool"]
    # The run the tool belongs to ends; its parent reads why, as it reads any failed child.
    assert child_result.status == RunStatus.FAILED
    assert child_result.reason is not None
    assert child_result.reason.startswith("tool call k1 (settle) ended the run")
    assert_ended_by(child_events, "k1")
    assert result.status == RunStatus.COMPLETED and result.final_answer == "the parent answers"
    assert "ended failed: tool call k1 (settle) ended the run" in replies[0]
    assert executed == ["B-2"]


async def test_a_parallel_turn_ends_at_the_call_that_ends_the_run(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    executed: list[str] = []
    model = write_script(
        tmp_path,
        [
            calls(
                ("b1", "balance", {"account": "A-1"}),
                ("c1", "settle", {"account": "A-9"}),
                ("b2", "balance", {"account": "A-2"}),
            ),
            answer("not again"),
        ],
    )
    config = AgentConfig(model=model, strategy=ExecutionStrategy(mode="parallel"))
    async with run_to_the_end(client, ledger(executed), task_queue, config, secrets=KEYS) as (
        run,
        result,
    ):
        history = await run.handle.fetch_history()
    assert result.status == RunStatus.FAILED and result.reason is not None
    assert result.reason.startswith("tool call c1 (settle) ended the run")
    assert executed.count("A-9") == 1
    await assert_not_wedged(run.handle)
    await assert_replays(history)


def test_a_huge_tool_error_is_clipped_after_its_secrets_are_scrubbed() -> None:
    message = f"the ledger is corrupted {SECRET} " + "x" * 3_000_000 + f" {SECRET} end"
    for ends_run in (True, False):
        failure = to_application_error(
            ToolExecutionError(message, ends_run=ends_run), "c1", "settle", [SECRET]
        )
        assert failure.message.startswith("the ledger is corrupted [redacted]")
        assert len(failure.message) <= MAX_TOOL_ERROR_CHARS
        model_text = failure.details[0]
        assert isinstance(model_text, str) and len(model_text) <= MAX_TOOL_ERROR_CHARS
        assert "the ledger is corrupted [redacted]" in model_text
        assert SECRET not in failure.message + model_text


async def test_a_huge_ordinary_tool_error_reaches_the_model_clipped_and_runs_once(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # 3 MB: over gRPC's message limit; unclipped, the failure never reaches the server and
    # the idempotent tool runs again at each attempt's timeout.
    executed: list[str] = []
    tools = ToolRegistry()

    @tools.tool(idempotent=True, start_to_close_timeout=5)
    def settle(account: str) -> str:
        """Settle an account."""
        executed.append(account)
        raise ToolError("the ledger is corrupted " + "x" * 3_000_000, retryable=False)

    model = write_script(tmp_path, [calls(("c1", "settle", {"account": "A"})), answer("went on")])
    async with run_to_the_end(client, tools, task_queue, AgentConfig(model=model)) as (run, result):
        conversation = await run.conversation()
    assert result.status == RunStatus.COMPLETED and result.final_answer == "went on"
    assert executed == ["A"]
    (told,) = [m for m in conversation if m.role == "tool"]
    text = str(told.content)
    assert "the ledger is corrupted" in text and len(text) <= 2 * MAX_TOOL_ERROR_CHARS


async def test_a_tool_raising_temporals_non_retryable_error_runs_once(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # Idempotent, so any other exception would be retried: the tool's own "never again" wins.
    executed: list[str] = []
    tools = ToolRegistry()

    @tools.tool(idempotent=True)
    def settle(account: str) -> str:
        """Settle an account."""
        executed.append(account)
        raise ApplicationError("the contract is void", non_retryable=True)

    model = write_script(tmp_path, [calls(("c1", "settle", {"account": "A"})), answer("went on")])
    async with run_to_the_end(client, tools, task_queue, AgentConfig(model=model)) as (run, result):
        (record,) = await run.timeline()
    assert result.status == RunStatus.COMPLETED and result.final_answer == "went on"
    assert executed == ["A"]
    assert (record.status, record.attempts) == ("failed", 1)
