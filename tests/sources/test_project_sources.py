"""A deployment configured by one project file, no Python module: a `durable-tools worker
--project` process serves an MCP server's, an OpenAPI document's and an HTTP endpoint's
tools through the session's real dev server; `run --project` takes its model, policy and
limits from the same file; and the plugin (`load_project(...).plugin()`) reads it too."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_support import HttpServer
from petstore_server import TOKEN, PetStore
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

import cli_support
from cli_support import cli, start_input
from durable_tools import AgentConfig, DurableTools, RunStatus
from durable_tools.worker import load_project
from support import answer, calls, write_script

cli_env = cli_support.cli_env  # the fixture, by the name the tests ask for

CLI = str(Path(sys.executable).parent / "durable-tools")


@pytest.fixture
async def mcp_server() -> AsyncIterator[HttpServer]:
    server = HttpServer()
    await server.start()
    try:
        yield server
    finally:
        server.kill()


def write_project(root: Path, task_queue: str, mcp: HttpServer, pets: PetStore, model: str) -> Path:
    (root / "specs").mkdir()
    (root / "specs" / "pets.json").write_text(json.dumps(pets.document))
    project = root / "durable-tools.toml"
    project.write_text(
        f"""
task_queue = "{task_queue}"

[worker]
max_concurrent_activities = 20
graceful_shutdown_seconds = 5

[run]
model = "{model}"
instructions = "You look after pets."

[policy]
require = "none"
deny_tools = ["pets_delete_pet"]

[limits]
max_turns = 6
max_tool_calls = 40

[[mcp]]
name = "calc"
url = "{mcp.url}"
include = ["add"]

[[openapi]]
document = "specs/pets.json"
prefix = "pets"
include = ["getPet", "deletePet"]

[[http]]
name = "secret_note"
method = "GET"
url = "{pets.base_url}/secret"
description = "Read the secret note."
auth = {{ kind = "bearer", secret = "pets_token" }}
[http.options]
read_only = true
max_calls_per_run = 3
"""
    )
    return project


STEPS = [
    calls(
        ("m1", "calc__add", {"a": 2, "b": 3}),
        ("o1", "pets_get_pet", {"petId": "1"}),
        ("h1", "secret_note", {}),
    ),
    answer("2 + 3, Rex, and the note"),
]


@pytest.fixture
def worker_process(
    env: WorkflowEnvironment, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Any]:
    """Start `durable-tools worker --project FILE` (call the result with the file)."""
    started: list[subprocess.Popen[str]] = []

    def start(project: Path) -> tuple[subprocess.Popen[str], list[str]]:
        environ = {
            **os.environ,
            "TEMPORAL_ADDRESS": env.client.service_client.config.target_host,
            "TEMPORAL_NAMESPACE": env.client.namespace,
            "DURABLE_TOOLS_SECRET_PETS_TOKEN": TOKEN,
            "DURABLE_TOOLS_HOME": str(tmp_path / "home"),
        }
        environ.pop("DURABLE_TOOLS_TASK_QUEUE", None)
        process = subprocess.Popen(
            [CLI, "worker", "--project", str(project)],
            cwd=tmp_path,  # no tools module anywhere: the file is all there is
            env=environ,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        started.append(process)
        lines: list[str] = []
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if "Ctrl-C or SIGTERM to stop" in line:
                return process, lines
        raise AssertionError("the worker did not start:\n" + "".join(lines))

    yield start
    for process in started:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()


async def test_a_worker_from_only_the_project_file_runs_its_sources(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    mcp_server: HttpServer,
    petstore: PetStore,
    cli_env: str,
    capsys: Any,
    worker_process: Any,
) -> None:
    model = write_script(tmp_path, STEPS)
    project = write_project(tmp_path, task_queue, mcp_server, petstore, model)
    # What the workers will serve, listed from the file alone.
    code, out, err = await cli(capsys, "tools", "--project", str(project), "--json")
    assert code == 0, err
    listed = {tool["name"]: tool for tool in json.loads(out)}
    assert set(listed) == {"calc__add", "pets_get_pet", "pets_delete_pet", "secret_note"}
    process, banner = worker_process(project)
    shown = "".join(banner)
    assert f"task queue {task_queue}" in shown
    assert "calc__add" in shown and "pets_get_pet" in shown and "secret_note" in shown
    assert f"project: {project}: 1 MCP, 1 OpenAPI, 1 HTTP sources" in shown
    # `run` takes the model, the task queue, the policy and the limits from the file.
    code, out, err = await cli(
        capsys, "run", "add and look", "--project", str(project), "--wait", "--json"
    )
    assert code == 0, err
    done = json.loads(out)
    assert done["status"] == "completed" and done["final_answer"] == "2 + 3, Rex, and the note"
    timeline = {r["call_id"]: r for r in done["timeline"]}
    assert {k: timeline[k]["status"] for k in ("m1", "o1", "h1")} == {
        "m1": "completed",
        "o1": "completed",
        "h1": "completed",
    }
    run = DurableTools(client, task_queue).run(done["run_id"])
    replies = {
        m.tool_call_id: m.content or "" for m in await run.conversation() if m.role == "tool"
    }
    assert "5" in replies["m1"] and "Rex" in replies["o1"] and "the secret is safe" in replies["h1"]
    started = await start_input(client, done["run_id"])
    assert started.config.limits.max_turns == 6 and started.config.limits.max_tool_calls == 40
    assert started.config.approval.deny_tools == ("pets_delete_pet",)
    assert started.config.instructions == "You look after pets."
    history = await run.handle.fetch_history()
    assert TOKEN not in history.to_json()
    process.send_signal(signal.SIGTERM)
    rest, _ = process.communicate(timeout=60)
    assert TOKEN not in shown + rest  # the secret was named, never printed


async def test_the_plugin_reads_the_same_project_file(
    env: WorkflowEnvironment,
    task_queue: str,
    tmp_path: Path,
    mcp_server: HttpServer,
    petstore: PetStore,
) -> None:
    model = write_script(tmp_path, STEPS)
    project = load_project(write_project(tmp_path, task_queue, mcp_server, petstore, model))
    plugin = await project.plugin(secrets={"pets_token": TOKEN})
    assert {"calc__add", "pets_get_pet", "pets_delete_pet", "secret_note"} <= {
        s.name for s in plugin.registry.specs()
    }
    assert plugin.registry.get("secret_note").spec.policy.max_calls_per_run == 3
    client = await Client.connect(
        env.client.service_client.config.target_host,
        namespace=env.client.namespace,
        plugins=[plugin],
    )
    async with Worker(client, task_queue=task_queue):
        assert project.limits is not None and project.policy is not None
        config = AgentConfig(model=model, limits=project.limits, approval=project.policy)
        run = await DurableTools(client, task_queue).start("add", config=config)
        result = await run.result()
    assert result.status == RunStatus.COMPLETED, result.reason
    assert result.final_answer == "2 + 3, Rex, and the note"


async def test_a_source_that_cannot_be_reached_is_named_without_a_traceback(
    tmp_path: Path, cli_env: str, capsys: Any
) -> None:
    down = HttpServer()  # a free port nobody listens on
    project = tmp_path / "durable-tools.toml"
    project.write_text(f'[[mcp]]\nname = "calc"\nurl = "{down.url}"\n')
    code, _, err = await cli(capsys, "tools", "--project", str(project))
    assert code == 2 and "Traceback" not in err
    assert "project file: McpConnectionError" in err and "calc" in err
