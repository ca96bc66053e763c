"""The `durable-tools` command line against the session's real dev server."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

import cli_support
from cli_support import cli, cli_json
from durable_tools import DurableTools, RunStatus
from durable_tools.demo.tools import registry as demo_registry
from support import (
    answer,
    calls,
    quick_slow_config,
    quick_slow_registry,
    running_worker,
    write_script,
)

cli_env = cli_support.cli_env  # the fixture, by the name the tests ask for


async def test_run_wait_show_and_runs(
    client: Client, task_queue: str, tmp_path: Path, cli_env: str, capsys: Any
) -> None:
    model = write_script(
        tmp_path,
        [calls(("c1", "lookup_order", {"order_id": "A-1001"})), answer("the grinder, delivered")],
    )
    run_id = f"cli-{uuid.uuid4().hex[:8]}"
    async with running_worker(client, demo_registry, task_queue):
        code, out, err = await cli(
            capsys,
            "run",
            "what did A-1001 buy?",
            "--model",
            model,
            "--tools",
            "durable_tools.demo.tools",
            "--id",
            run_id,
            "--name",
            "cli-agent",
            "--wait",
            "--json",
        )
        assert code == 0, err
        done = json.loads(out)
        assert done["run_id"] == run_id
        assert done["status"] == "completed"
        assert done["final_answer"] == "the grinder, delivered"
        assert [r["tool"] for r in done["timeline"]] == ["lookup_order"]
        assert "lookup_order" in err  # progress went to stderr, stdout stays JSON

        shown = await cli_json(capsys, "show", run_id)
        assert shown["source"] == "worker"
        assert shown["status"] == "completed"
        assert shown["timeline"][0]["call_id"] == "c1"
        assert shown["timeline"][0]["status"] == "completed"

        code, text, _ = await cli(capsys, "show", run_id)
        assert code == 0 and "lookup_order" in text and "the grinder, delivered" in text

    # Visibility may trail the run (seconds, on a loaded machine), and the dev server is
    # shared: other tests' runs may be newer, so the list is narrowed to this agent's.
    for _ in range(300):
        listed = await cli_json(capsys, "runs", "--agent", "cli-agent", "--limit", "50")
        mine = [r for r in listed if r["run_id"] == run_id]
        if mine and mine[0]["status"] == "completed":
            break
        await asyncio.sleep(0.1)
    assert mine and mine[0]["agent"] == "cli-agent"
    assert mine[0]["execution_status"] == "COMPLETED"


async def test_pending_approve_and_deny(
    client: Client, task_queue: str, tmp_path: Path, cli_env: str, capsys: Any
) -> None:
    model = write_script(
        tmp_path,
        [
            calls(
                ("r1", "issue_refund", {"order_id": "A-1001", "amount_cents": 500}),
                ("r2", "issue_refund", {"order_id": "A-1002", "amount_cents": 700}),
            ),
            answer("refunds decided"),
        ],
    )
    async with running_worker(client, demo_registry, task_queue):
        started = await cli_json(
            capsys, "run", "refund both", "--model", model, "--strategy", "parallel"
        )
        run_id = started["run_id"]
        approvals: dict[str, dict[str, Any]] = {}
        for _ in range(100):
            pending = await cli_json(capsys, "pending")
            entry = next((p for p in pending if p["run_id"] == run_id), None)
            if entry and len(entry.get("approvals", [])) == 2:
                approvals = {a["call_id"]: a for a in entry["approvals"]}
                break
            await asyncio.sleep(0.1)
        assert set(approvals) == {"r1", "r2"}
        assert approvals["r1"]["tool"] == "issue_refund"
        assert approvals["r1"]["arguments"] == {"order_id": "A-1001", "amount_cents": 500}

        code, out, err = await cli(
            capsys,
            "approve",
            run_id,
            "r1",
            "--as",
            "alice",
            "--reason",
            "fine",
            "--hash",
            approvals["r1"]["arguments_hash"],
        )
        assert code == 0, err
        assert "approved" in out

        code, out, err = await cli(capsys, "deny", run_id, "r2", "--hash", "0" * 64)
        assert code == 2
        assert "not the request you saw" in err and "hash" in err
        assert "Traceback" not in err

        r2_hash = approvals["r2"]["arguments_hash"]
        code, out, err = await cli(
            capsys, "deny", run_id, "r2", "--as", "bob", "--reason", "no", "--hash", r2_hash
        )
        assert code == 0, err
        assert "denied" in out

        result = await DurableTools(client, task_queue).run(run_id).result()
        timeline = await DurableTools(client, task_queue).run(run_id).timeline()
    assert result.status == RunStatus.COMPLETED
    assert {r.call_id: r.status for r in timeline} == {"r1": "completed", "r2": "denied"}


async def test_show_without_worker_steer_and_cancel(
    client: Client, task_queue: str, cli_env: str, capsys: Any
) -> None:
    run = await DurableTools(client, task_queue).start("nobody serves me", model="scripted:x")
    try:
        shown = await cli_json(capsys, "show", run.run_id)
        assert shown["source"] == "server"
        assert shown["execution_status"] == "RUNNING"
        assert shown["task_queue"] == task_queue
        assert "worker" in shown["note"]

        code, out, _ = await cli(capsys, "steer", run.run_id, "be brief")
        assert code == 0 and "sent" in out
        code, out, _ = await cli(capsys, "cancel", run.run_id, "--reason", "test over")
        assert code == 0 and "cancellation requested" in out
        code, _, err = await cli(capsys, "approve", run.run_id, "c1", "--hash", "0" * 64)
        assert code == 2 and "no worker" in err
    finally:
        await run.handle.terminate("test cleanup")


async def test_unknown_run(cli_env: str, capsys: Any) -> None:
    code, _, err = await cli(capsys, "show", f"no-such-run-{uuid.uuid4().hex[:6]}")
    assert code == 2
    assert "no run" in err and "Traceback" not in err


async def test_tools_prints_schemas(capsys: Any) -> None:
    tools = await cli_json(capsys, "tools", "--tools", "durable_tools.demo.tools")
    by_name = {t["name"]: t for t in tools}
    assert set(by_name) == {"lookup_order", "export_report", "issue_refund"}
    refund = by_name["issue_refund"]
    assert refund["parameters"]["required"] == ["order_id", "amount_cents"]
    assert refund["approval"] == "always"
    assert "ctx" not in refund["parameters"]["properties"]
    assert by_name["lookup_order"]["safety"]["read_only"] is True
    code, out, _ = await cli(capsys, "tools", "--tools", "durable_tools.demo.tools")
    assert code == 0 and "approval: always" in out
    code, _, err = await cli(capsys, "tools", "--tools", "no_such_module_xyz")
    assert code == 2 and "cannot import" in err


async def test_connection_refused(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    monkeypatch.setenv("TEMPORAL_ADDRESS", "127.0.0.1:1")
    code, _, err = await cli(capsys, "runs")
    assert code == 2
    assert "no Temporal server answers at 127.0.0.1:1" in err
    assert "durable-tools server" in err
    # The installed program: one line on stderr, exit code 2, no traceback.
    program = Path(sys.executable).parent / "durable-tools"
    proc = await asyncio.to_thread(
        subprocess.run,
        [str(program), "show", "some-run"],
        capture_output=True,
        text=True,
        env={**os.environ, "TEMPORAL_ADDRESS": "127.0.0.1:1"},
        timeout=30,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0
    assert "no Temporal server answers at 127.0.0.1:1" in proc.stderr


async def test_demo_auto_approve(cli_env: str, tmp_path: Path, capsys: Any) -> None:
    code, out, err = await cli(capsys, "demo", "--auto-approve")
    assert code == 0, out + err
    assert f"using the server that answers at {cli_env}" in out
    assert "approved automatically (--auto-approve)" in out
    assert "issue_refund" in out and "export_report" in out and "lookup_order" in out
    assert "artifact store" in out
    assert "Final answer:" in out
    assert "Run completed" in out
    assert any((tmp_path / "artifacts").rglob("*")), "the export went to the artifact store"


async def test_show_lists_approvals_inside_subagents(
    client: Client, task_queue: str, tmp_path: Path, cli_env: str, capsys: Any
) -> None:
    from durable_tools import AgentConfig, ToolRegistry

    registry = ToolRegistry()

    @registry.tool(approval=True, idempotent=True)
    def publish(text: str) -> str:
        """Publish (needs approval)."""
        return "published"

    child = write_script(tmp_path, [calls(("pub", "publish", {"text": "t"})), answer("child ok")])
    registry.subagent(AgentConfig(model=child), name="writer", description="Writes.")
    parent = write_script(tmp_path, [calls(("w1", "writer", {"task": "write"})), answer("done")])
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("go", model=parent)
        for _ in range(100):
            shown = await cli_json(capsys, "show", run.run_id)
            if shown.get("subagent_approvals"):  # absent until the worker is seen polling
                break
            await asyncio.sleep(0.1)
        [waiting] = shown["subagent_approvals"]
        assert waiting["run_id"] == f"{run.run_id}.w1" and waiting["call_id"] == "pub"
        code, out, _ = await cli(capsys, "show", run.run_id)
        assert code == 0 and f"in sub-agent run {run.run_id}.w1" in out
        code, _, err = await cli(
            capsys, "approve", run.run_id, "pub", "--as", "ops", "--hash", waiting["arguments_hash"]
        )
        assert code == 0, err
        assert (await run.result()).status == RunStatus.COMPLETED


async def test_show_marks_each_call_done_as_it_finishes(
    client: Client, task_queue: str, tmp_path: Path, cli_env: str, capsys: Any
) -> None:
    gate = asyncio.Event()
    registry, config = quick_slow_registry(gate), quick_slow_config(tmp_path)
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("go", config=config)
        for _ in range(100):
            shown = await cli_json(capsys, "show", run.run_id)
            states = {r["call_id"]: r["status"] for r in shown.get("timeline", [])}
            if states.get("a") == "completed":
                break
            await asyncio.sleep(0.1)
        # The workflow's own running_tools still lists a, b and c here; show does not.
        assert states == {"a": "completed", "b": "running", "c": "invalid"}
        assert shown["running_tools"] == ["b"]
        code, text, _ = await cli(capsys, "show", run.run_id)
        assert code == 0 and "running: b\n" in text
        gate.set()
        assert (await run.result()).status == RunStatus.COMPLETED


MCP_TOOLS_MODULE = """
import sys
from durable_tools.sources import McpStdio, attach_mcp_sync
from durable_tools import ToolRegistry

registry = ToolRegistry()
attach_mcp_sync(registry, McpStdio(sys.executable, ({server!r}, "stdio"), name="calc"))
"""


@pytest.fixture
def mcp_tools_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A tools module that attaches the test MCP server with `attach_mcp_sync` at import."""
    server = Path(__file__).parent / "sources" / "mcp_test_server.py"
    name = f"mcp_tools_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(MCP_TOOLS_MODULE.format(server=str(server)))
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


async def test_tools_loads_a_module_that_attaches_mcp_and_shows_one_approval_rule(
    mcp_tools_module: str, capfd: Any
) -> None:
    # capfd, not capsys: the stdio MCP server inherits stderr, which needs a real fd.
    capsys = capfd
    tools = await cli_json(capsys, "tools", "--tools", mcp_tools_module)
    by_name = {t["name"]: t for t in tools}
    # Marked destructive by the server: the run asks for approval, and so says --json.
    assert by_name["calc__delete_file"]["approval"] == "always"
    assert by_name["calc__add"]["approval"] == "never"
    code, out, err = await cli(capsys, "tools", "--tools", mcp_tools_module)
    assert code == 0, err
    delete = out.split("calc__delete_file", 1)[1].split("\n\n", 1)[0]
    assert "approval: always" in delete


async def test_worker_runs_a_module_that_attaches_mcp(
    client: Client, task_queue: str, tmp_path: Path, cli_env: str, mcp_tools_module: str
) -> None:
    model = write_script(tmp_path, [calls(("c1", "calc__add", {"a": 2, "b": 3})), answer("5")])
    program = Path(sys.executable).parent / "durable-tools"
    worker = subprocess.Popen(
        [str(program), "worker", "--tools", mcp_tools_module, "--graceful-shutdown", "5"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])},
        text=True,
    )
    try:
        assert worker.stdout is not None
        banner = await asyncio.to_thread(worker.stdout.readline)
        assert banner.startswith("worker on"), banner + worker.stdout.read()
        run = await DurableTools(client, task_queue).start("add", model=model)
        assert (await run.result()).final_answer == "5"
        [record] = await run.timeline()
        assert (record.tool, record.status, record.result) == ("calc__add", "completed", "5")
    finally:
        worker.terminate()
        output, _ = await asyncio.to_thread(worker.communicate, timeout=30)
    assert worker.returncode == 0, output
    assert "cannot run inside an event loop" not in output


async def test_run_links_to_the_ui_the_server_recorded(
    client: Client, task_queue: str, cli_env: str, capsys: Any
) -> None:
    from durable_tools.server._process import process_cmdline
    from durable_tools.server._ui import forget_ui, record_ui

    # What `durable-tools server --ui-port 9411` records while it runs.
    me = process_cmdline(os.getpid())
    assert me is not None
    record_ui(cli_env, "http://127.0.0.1:9411", os.getpid(), me)
    try:
        started = await cli_json(capsys, "run", "hello", "--model", "scripted:none")
        assert started["ui_url"].startswith("http://127.0.0.1:9411/namespaces/")
        code, out, _ = await cli(capsys, "show", started["run_id"])
        assert code == 0 and "UI: http://127.0.0.1:9411/namespaces/" in out
        # A record left by a server that is gone is ignored.
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()
        record_ui(cli_env, "http://127.0.0.1:9411", dead.pid, me)
        again = await cli_json(capsys, "run", "hello", "--model", "scripted:none")
        assert not again["ui_url"].startswith("http://127.0.0.1:9411")  # the id may hold 9411
    finally:
        forget_ui(cli_env, dead.pid)
        for run_id in (started["run_id"], again["run_id"]):
            await DurableTools(client, task_queue).run(run_id).handle.terminate("test over")
