"""The embedded dev server, against the real `temporal` binary (no mocks)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError

from durable_tools import connect
from durable_tools.search_attributes import SEARCH_ATTRIBUTES
from durable_tools.server import (
    DevServer,
    DevServerError,
    ensure_server,
    find_temporal_cli,
    ui_url,
)
from durable_tools.server._process import PidFile, process_cmdline
from durable_tools.server._ui import record_ui
from support import free_port


async def custom_attributes(client: Client) -> dict[str, int]:
    response = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=client.namespace)
    )
    return dict(response.custom_attributes)


def test_find_temporal_cli() -> None:
    assert Path(find_temporal_cli()).name.startswith("temporal")


def test_ui_url(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DURABLE_TOOLS_HOME", str(tmp_path))  # no server recorded there
    monkeypatch.delenv("TEMPORAL_ADDRESS", raising=False)
    monkeypatch.delenv("TEMPORAL_UI_URL", raising=False)
    assert ui_url("default", "run-1") == "http://127.0.0.1:8233/namespaces/default/workflows/run-1"
    assert ui_url("default", "a/b c").endswith("/workflows/a%2Fb%20c")
    monkeypatch.setenv("TEMPORAL_UI_URL", "https://temporal.example/")
    assert ui_url("ns", "x") == "https://temporal.example/namespaces/ns/workflows/x"


@pytest.mark.parametrize(
    "forged", ["javascript:alert(1)//", "http://", "data:text/html,x", "http://h/\nx", 42]
)
def test_a_recorded_ui_that_is_no_http_url_is_ignored(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, forged: object
) -> None:
    # The record becomes an href in the inbox: only an http(s) URL with a host is used.
    monkeypatch.setenv("DURABLE_TOOLS_HOME", str(tmp_path))
    monkeypatch.delenv("TEMPORAL_UI_URL", raising=False)
    me = process_cmdline(os.getpid())
    assert me is not None
    record_ui("127.0.0.1:7300", "http://127.0.0.1:9400", os.getpid(), me)
    assert ui_url("ns", "x", address="127.0.0.1:7300").startswith("http://127.0.0.1:9400/")
    record_ui("127.0.0.1:7300", forged, os.getpid(), me)  # type: ignore[arg-type]
    assert ui_url("ns", "x", address="127.0.0.1:7300").startswith("http://127.0.0.1:8300/")


def test_command_line(tmp_path: Path) -> None:
    server = DevServer(tmp_path, port=7300, headless=True)
    cmd = server.command()
    assert cmd[1:3] == ["server", "start-dev"]
    assert cmd[cmd.index("--db-filename") + 1] == str(tmp_path / "temporal.sqlite")
    assert cmd[cmd.index("--ip") + 1] == "127.0.0.1"
    assert "--headless" in cmd and "--ui-port" not in cmd
    assert "AgentStatus=Keyword" in cmd and "PendingApprovals=Int" in cmd
    assert "history.transferProcessorMaxPollRPS=10000" in cmd
    assert DevServer(tmp_path, port=7300).ui_url("w") == (
        "http://127.0.0.1:8300/namespaces/default/workflows/w"
    )


def test_default_data_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DURABLE_TOOLS_HOME", str(tmp_path / "home"))
    assert DevServer().data_dir == tmp_path / "home"


async def test_start_restart_persists_and_ensure_reuses(tmp_path: Path) -> None:
    port, ui_port = free_port(), free_port()
    server = DevServer(tmp_path, port=port, ui_port=ui_port)
    client = await server.start()
    try:
        assert server.running
        attrs = await custom_attributes(client)
        for key in SEARCH_ATTRIBUTES:
            assert attrs[key.name] == int(key.indexed_value_type), key.name
        assert attrs["PendingApprovals"] == IndexedValueType.INDEXED_VALUE_TYPE_INT

        # A workflow no worker will ever pick up: it stays "running" in the database.
        workflow_id = f"persist-{uuid.uuid4()}"
        await client.start_workflow(
            "NobodyRunsThis", id=workflow_id, task_queue=f"nobody-{uuid.uuid4()}"
        )

        # ensure_server finds the running server and starts nothing.
        reused, started = await ensure_server(server.address)
        assert started is None
        assert (await reused.get_workflow_handle(workflow_id).describe()).id == workflow_id
    finally:
        assert await server.stop() is not None
    assert not server.running
    assert (tmp_path / "temporal.sqlite").exists()
    assert (tmp_path / "server.log").exists()

    async with DevServer(tmp_path, port=port, headless=True) as again:
        assert again.client is not None
        described = await again.client.get_workflow_handle(workflow_id).describe()
        assert described.status == WorkflowExecutionStatus.RUNNING
        assert set(await custom_attributes(again.client)) >= {k.name for k in SEARCH_ATTRIBUTES}
        # The default converter of every project client: connect() works on it too.
        other = await connect(again.address)
        assert (await other.get_workflow_handle(workflow_id).describe()).id == workflow_id
        await again.client.get_workflow_handle(workflow_id).terminate("test done")
    assert not again.running


async def test_ensure_server_starts_one_when_nothing_answers(tmp_path: Path) -> None:
    address = f"127.0.0.1:{free_port()}"
    client, started = await ensure_server(address, data_dir=tmp_path, headless=True)
    try:
        assert started is not None and started.running
        assert set(await custom_attributes(client)) >= {k.name for k in SEARCH_ATTRIBUTES}
    finally:
        assert started is not None
        await started.stop()


async def test_ensure_server_registers_attributes_on_existing_server(client: Client) -> None:
    # The session server (conftest) already has them: this must be a quiet no-op.
    target = client.service_client.config.target_host
    reused, started = await ensure_server(target)
    assert started is None
    assert set(await custom_attributes(reused)) >= {k.name for k in SEARCH_ATTRIBUTES}


async def test_ensure_server_refuses_to_start_remote(tmp_path: Path) -> None:
    with pytest.raises(DevServerError, match=r"only started on 127\.0\.0\.1"):
        await ensure_server("192.0.2.1:7233", data_dir=tmp_path)


async def test_start_failure_points_at_log(tmp_path: Path) -> None:
    server = DevServer(tmp_path, port=free_port(), extra_args=["--no-such-flag"], headless=True)
    with pytest.raises(DevServerError, match=r"server\.log"):
        await server.start()
    assert not server.running


# -- the temporal child never outlives its parent ----------------------------------------


def alive_as(pid: int, cmdline: list[str]) -> bool:
    return process_cmdline(pid) == cmdline


def wait_until_gone(pid: int, cmdline: list[str], within: float = 30.0) -> bool:
    """Polls until the process no longer runs `cmdline` (bounded: the test fails, not hangs)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not alive_as(pid, cmdline):
            return True
        time.sleep(0.1)
    return False


def start_cli_server(data_dir: Path, port: int) -> subprocess.Popen[str]:
    command = ["server", "--data-dir", str(data_dir), "--port", str(port), "--headless"]
    process = subprocess.Popen(
        [sys.executable, "-m", "durable_tools.cli", *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    output = []
    for line in process.stdout:  # ends when the command exits (and fails the test below)
        output.append(line)
        if line.startswith("Ctrl-C to stop"):
            return process
    process.wait()
    raise AssertionError("durable-tools server did not start:\n" + "".join(output))


def stop_cli_server(process: subprocess.Popen[str]) -> str:
    process.send_signal(signal.SIGTERM)
    out, _ = process.communicate(timeout=60)
    assert process.returncode == 0, out
    return out


def start_orphan(cmd: list[str], data_dir: Path) -> int:
    """Start `cmd` as a leftover would be: from a parent (a shell) that is gone, recorded in
    `server.pid` as a `DevServer` would have recorded it. Returns its pid."""
    shell = subprocess.run(
        ["sh", "-c", '"$@" >/dev/null 2>&1 </dev/null & echo $$ $!', "sh", *cmd],
        capture_output=True,
        text=True,
        check=True,
    )
    parent, pid = (int(part) for part in shell.stdout.split())
    PidFile(data_dir / "server.pid").write(pid, cmd, parent=parent)
    return pid


def recorded_child(data_dir: Path) -> tuple[int, list[str]]:
    record = json.loads((data_dir / "server.pid").read_text())
    return int(record["pid"]), list(record["cmdline"])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal: Linux")
def test_kill_9_of_the_server_command_takes_the_temporal_child_along(tmp_path: Path) -> None:
    port = free_port()
    server = start_cli_server(tmp_path, port)
    child, cmdline = recorded_child(tmp_path)
    assert alive_as(child, cmdline) and "start-dev" in cmdline

    server.kill()  # SIGKILL: no handler, no cleanup of its own
    server.communicate(timeout=10)
    try:
        assert wait_until_gone(child, cmdline), f"temporal child {child} outlived its parent"
    finally:
        if alive_as(child, cmdline):  # don't leave it behind when the assertion fails
            os.kill(child, signal.SIGKILL)

    # And the same command starts again on the same port and database.
    again = start_cli_server(tmp_path, port)
    assert "stopped" in stop_cli_server(again)
    assert not (tmp_path / "server.pid").exists()


def test_server_command_stops_a_leftover_of_its_data_dir(tmp_path: Path) -> None:
    # A leftover: a dev server on this data dir whose parent is gone (simulated by starting
    # it directly and recording it as a DevServer would have).
    port = free_port()
    cmd = DevServer(tmp_path, port=port, headless=True).command()
    leftover = start_orphan(cmd, tmp_path)
    try:
        assert wait_for_cmdline(leftover, cmd)
        server = start_cli_server(tmp_path, port)  # before: "already answers" and exit 2
        try:
            assert not alive_as(leftover, cmd)  # stopped before ours started
            child, _ = recorded_child(tmp_path)
            assert child != leftover
        finally:
            stop_cli_server(server)
    finally:
        if alive_as(leftover, cmd):
            os.kill(leftover, signal.SIGKILL)


async def test_start_stops_a_leftover_and_keeps_its_state(tmp_path: Path) -> None:
    port = free_port()
    cmd = DevServer(tmp_path, port=port, headless=True).command()
    leftover = start_orphan(cmd, tmp_path)
    try:
        workflow_id = f"left-{uuid.uuid4()}"
        old = None
        for _ in range(300):  # the leftover's own startup
            try:
                old = await connect(f"127.0.0.1:{port}")
                await old.start_workflow(
                    "NobodyRunsThis", id=workflow_id, task_queue=f"nobody-{uuid.uuid4()}"
                )
                break
            except (RuntimeError, RPCError):
                await asyncio.sleep(0.1)
        assert old is not None

        # Another port too: the leftover holds the database, whatever port it listens on.
        async with DevServer(tmp_path, port=free_port(), headless=True) as server:
            assert not alive_as(leftover, cmd)
            assert server.client is not None
            handle = server.client.get_workflow_handle(workflow_id)
            assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING
            await handle.terminate("test done")
    finally:
        if alive_as(leftover, cmd):
            os.kill(leftover, signal.SIGKILL)


async def test_a_pid_file_naming_an_unrelated_process_is_left_alone(tmp_path: Path) -> None:
    # The recorded pid now belongs to something else (here: a sleep): never signal it.
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        cmd = DevServer(tmp_path, headless=True).command()
        PidFile(tmp_path / "server.pid").write(bystander.pid, cmd)
        assert await DevServer(tmp_path, headless=True).stop_leftover() is None
        assert bystander.poll() is None
        assert not (tmp_path / "server.pid").exists()  # the stale record is dropped
    finally:
        bystander.kill()
        bystander.wait()


async def test_a_record_of_another_data_dirs_server_is_left_alone(tmp_path: Path) -> None:
    # A live process that reads exactly like a dev server of *another* database: `sh` runs
    # the script named `server` in its cwd, with argv[0] and the arguments of that command.
    other = DevServer(tmp_path / "other", headless=True).command()
    (tmp_path / "server").write_text("sleep 60\n")
    lookalike = subprocess.Popen(other, executable="/bin/sh", cwd=tmp_path)
    try:
        assert wait_for_cmdline(lookalike.pid, other)
        (tmp_path / "data").mkdir()
        PidFile(tmp_path / "data" / "server.pid").write(lookalike.pid, other)
        assert await DevServer(tmp_path / "data", headless=True).stop_leftover() is None
        assert lookalike.poll() is None
    finally:
        lookalike.kill()
        lookalike.wait()


def wait_for_cmdline(pid: int, cmdline: list[str], within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if alive_as(pid, cmdline):
            return True
        time.sleep(0.05)
    return False


async def test_the_web_ui_gets_the_codec_endpoint_it_is_given(tmp_path: Path) -> None:
    port, ui_port = free_port(), free_port()
    endpoint = "http://127.0.0.1:8888"
    server = DevServer(tmp_path, port=port, ui_port=ui_port, ui_codec_endpoint=endpoint)
    async with server, httpx.AsyncClient() as http:
        settings = (await http.get(f"http://127.0.0.1:{ui_port}/api/v1/settings")).json()
    assert settings["Codec"]["Endpoint"] == endpoint


@pytest.mark.parametrize(
    "endpoint", ["ftp://host/x", "127.0.0.1:8888", "http://", "http://host/\nx", "javascript:x"]
)
def test_a_codec_endpoint_the_ui_cannot_use_is_refused(tmp_path: Path, endpoint: str) -> None:
    with pytest.raises(ValueError, match="http\\(s\\) URL"):
        DevServer(tmp_path, ui_codec_endpoint=endpoint)
    code = subprocess.run(
        [sys.executable, "-m", "durable_tools.cli", "server", "--ui-codec-endpoint", endpoint],
        capture_output=True,
        text=True,
        env={**os.environ, "DURABLE_TOOLS_HOME": str(tmp_path)},
        timeout=60,
    )
    assert code.returncode == 2 and "--ui-codec-endpoint" in code.stderr
