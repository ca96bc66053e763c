"""`durable-tools pending` shows a parent run that waits on its sub-agent, and the command
it prints (naming the parent) decides the sub-agent's call."""

from __future__ import annotations

import asyncio
import shlex
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from temporalio.client import Client

import cli_support
from cli_support import cli, cli_json
from durable_tools import AgentConfig, DurableTools, RunStatus, ToolRegistry
from durable_tools.client.render._text import render_snapshot
from durable_tools.workflows import RunSnapshot, SubagentWait
from support import answer, calls, running_worker, write_script

cli_env = cli_support.cli_env  # the fixture, by the name the tests ask for


def writer_registry(tmp_path: Path, published: list[str]) -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(approval=True, idempotent=True, approval_summary="publish {text}")
    def publish(text: str) -> str:
        """Publish (needs approval)."""
        published.append(text)
        return "published"

    child = write_script(tmp_path, [calls(("pub", "publish", {"text": "t"})), answer("child ok")])
    registry.subagent(AgentConfig(model=child), name="writer", description="Writes.")
    return registry


async def test_pending_lists_the_parent_with_the_command_that_decides_its_child(
    client: Client, task_queue: str, tmp_path: Path, cli_env: str, capsys: Any
) -> None:
    published: list[str] = []
    parent = write_script(tmp_path, [calls(("w1", "writer", {"task": "write"})), answer("done")])
    async with running_worker(client, writer_registry(tmp_path, published), task_queue):
        run = await DurableTools(client, task_queue).start("go", model=parent)
        child_id = f"{run.run_id}.w1"
        entry: dict[str, Any] = {}
        for _ in range(150):
            listed = {p["run_id"]: p for p in await cli_json(capsys, "pending")}
            entry = listed.get(run.run_id, {})
            if entry.get("subagent_approvals") and child_id in listed:
                break
            await asyncio.sleep(0.1)
        [told] = entry["subagent_approvals"]
        assert entry["status"] == "awaiting_approval" and entry["approvals"] == []
        assert (told["run_id"], told["call_id"], told["tool"]) == (child_id, "pub", "publish")
        code, out, _ = await cli(capsys, "pending", "--agent", "agent")
        assert code == 0
        block = out.split(f"{run.run_id}  agent", 1)[1]
        assert f"waits on sub-agent run {child_id}: approval of publish (call pub)" in block
        approve = next(line for line in block.splitlines() if "approve:" in line)
        command = approve.split("approve:", 1)[1].strip()
        assert command == f"durable-tools approve {run.run_id} pub --hash {told['arguments_hash']}"
        code, out, err = await cli(capsys, *shlex.split(command)[1:], "--as", "ops")
        assert code == 0, err
        assert f"in sub-agent run {child_id}" in out
        result = await run.result()
        for _ in range(150):
            if run.run_id not in {p["run_id"] for p in await cli_json(capsys, "pending")}:
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("the parent is still listed as waiting")
        # The parent's events include the child's, marked with its run id.
        code, out, err = await cli(capsys, "events", run.run_id)
        assert code == 0, err
        theirs = [line for line in out.splitlines() if line.startswith(f"[sub-agent {child_id}]")]
        assert any("approval.decided" in line for line in theirs), out
        mine = [line for line in out.splitlines() if not line.startswith("[sub-agent")]
        assert any("subagent.waiting" in line for line in mine), out
    assert result.status == RunStatus.COMPLETED and published == ["t"]


def test_what_a_run_was_told_of_its_sub_agent_prints_safely_with_the_parents_command() -> None:
    # A notice is input from outside (anyone who may signal the run can send one): what
    # it says reaches the terminal escaped, and the command names the parent.
    wait = SubagentWait(
        run_id="parent.w1\n\x1b[2Jfake prompt$ ",
        call_id="c1; rm -rf ~",
        tool="publish\x1b[31m",
        summary="publish \u202eevil\x07",
        arguments_hash="a" * 64,
        requested_at=datetime.now(UTC),
    )
    snapshot = RunSnapshot(
        status=RunStatus.AWAITING_APPROVAL,
        agent="agent",
        turn=1,
        tool_calls=1,
        subagent_approvals=[wait],
    )
    shown = render_snapshot("parent", snapshot, [], "http://ui")
    assert not set(shown) & {"\x1b", "\x07", "\u202e"}
    assert "waits on sub-agent run parent.w1" in shown
    approve = next(line for line in shown.splitlines() if "approve:" in line)
    assert approve.split("approve:", 1)[1].split() == [
        "durable-tools",
        "approve",
        "parent",
        "'c1;",
        "rm",
        "-rf",
        "~'",
        "--hash",
        "a" * 64,
    ]
    assert shlex.split(approve.split("approve:", 1)[1])[3] == "c1; rm -rf ~"
