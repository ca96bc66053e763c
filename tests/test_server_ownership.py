"""One data directory, one server: a second start never stops a server that is owned, a kept
demo server outlives the demo, and `server` listens where the other commands look.

Real processes throughout: `durable-tools server` and `durable-tools demo` as subprocesses
on a temporary data directory and free ports (never ~/.durable-tools, never 7233).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from temporalio.api.workflowservice.v1 import GetSystemInfoRequest

from durable_tools import DurableTools, connect
from durable_tools.server import DevServer, DevServerError, ensure_server
from durable_tools.server._process import PidFile, process_cmdline
from support import free_port
from test_server import (
    alive_as,
    recorded_child,
    start_cli_server,
    stop_cli_server,
    wait_for_cmdline,
    wait_until_gone,
)

PROGRAM = [sys.executable, "-m", "durable_tools.cli"]


def cli_env(home: Path, address: str | None = None) -> dict[str, str]:
    env = {**os.environ, "DURABLE_TOOLS_HOME": str(home)}
    for name in ("TEMPORAL_ADDRESS", "TEMPORAL_UI_URL", "DURABLE_TOOLS_ARTIFACTS"):
        env.pop(name, None)
    if address is not None:
        env["TEMPORAL_ADDRESS"] = address
    return env


def run_cli(
    *args: str, env: dict[str, str], timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run a command to its end; a command that does not end (a second server that took
    over) is killed and fails the test."""
    process = subprocess.Popen(
        [*PROGRAM, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True
    )
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
        raise AssertionError(f"`{' '.join(args)}` did not end:\n{out}\n{err}") from None
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def ports_with_ui() -> tuple[int, int]:
    """A free frontend port whose default UI port (port + 1000) is free too."""
    while True:
        port = free_port()
        if port + 1000 <= 65535:
            try:
                with socket.socket() as sock:
                    sock.bind(("127.0.0.1", port + 1000))
                return port, port + 1000
            except OSError:
                continue


# -- item 1: a second server on the same data directory ---------------------------------


@pytest.mark.parametrize("same_port", [True, False], ids=["same-port", "other-port"])
def test_a_second_server_command_on_the_data_dir_leaves_the_first_alone(
    tmp_path: Path, same_port: bool
) -> None:
    port = free_port()
    first = start_cli_server(tmp_path, port)
    try:
        child, cmdline = recorded_child(tmp_path)
        second_port = port if same_port else free_port()
        second = run_cli(
            "server", "--data-dir", str(tmp_path), "--port", str(second_port), "--headless",
            env=cli_env(tmp_path),
        )  # fmt: skip
        # Before: "outlived its parent: stopping it", and the second took over.
        assert second.returncode == 2, second.stdout + second.stderr
        assert f"pid {child}" in second.stderr and "not safe" in second.stderr
        assert "outlived its parent" not in second.stderr
        assert alive_as(child, cmdline)
        assert recorded_child(tmp_path) == (child, cmdline)  # its record is still there
        assert first.poll() is None
    finally:
        out = stop_cli_server(first)
    assert "stopped" in out
    assert not (tmp_path / "server.pid").exists()


async def test_a_second_start_in_one_process_is_refused_and_the_first_keeps_serving(
    tmp_path: Path,
) -> None:
    async with DevServer(tmp_path, port=free_port(), headless=True) as first:
        with pytest.raises(DevServerError, match=f"pid {first.pid}.*not safe"):
            await DevServer(tmp_path, port=free_port(), headless=True).start()
        # Nor does ensure_server() on another address take the data directory over.
        with pytest.raises(DevServerError, match="not safe"):
            await ensure_server(f"127.0.0.1:{free_port()}", data_dir=tmp_path, headless=True)
        assert first.running and first.client is not None
        await first.client.workflow_service.get_system_info(GetSystemInfoRequest())
        assert PidFile(first.pid_path).live() is not None


async def test_a_server_whose_parent_still_runs_is_never_stopped(tmp_path: Path) -> None:
    # A server on this data directory whose starter does not hold the lock (a version before
    # it, or another tool) but is alive: this test process.
    cmd = DevServer(tmp_path, port=free_port(), headless=True).command()
    owned = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_for_cmdline(owned.pid, cmd)  # exec'd: /proc shows the recorded command
        PidFile(tmp_path / "server.pid").write(owned.pid, cmd)  # parent: this process
        with pytest.raises(DevServerError, match=f"started by pid {os.getpid()}, which still runs"):
            await DevServer(tmp_path, port=free_port(), headless=True).start()
        assert owned.poll() is None
        assert PidFile(tmp_path / "server.pid").live() is not None
    finally:
        owned.kill()
        owned.wait()


async def test_stopping_a_server_keeps_a_record_that_is_not_its_own(tmp_path: Path) -> None:
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        server = DevServer(tmp_path, port=free_port(), headless=True)
        await server.start()
        PidFile(server.pid_path).write(bystander.pid, ["sleep", "60"])  # someone else's now
        await server.stop()
        assert (tmp_path / "server.pid").exists()
    finally:
        bystander.kill()
        bystander.wait()


# -- item 2: `demo --keep-server` keeps it -----------------------------------------------


def test_demo_keep_server_leaves_a_server_that_outlives_the_demo(tmp_path: Path) -> None:
    port, ui_port = ports_with_ui()
    address = f"127.0.0.1:{port}"
    env = cli_env(tmp_path, address)
    kept = run_cli("demo", "--keep-server", "--auto-approve", env=env, timeout=300)
    assert kept.returncode == 0, kept.stdout + kept.stderr
    found = re.search(r"keeps running \(pid (\d+)\)", kept.stdout)
    link = re.search(r"^UI:\s+(\S+)", kept.stdout, re.MULTILINE)
    assert found and link, kept.stdout
    pid = int(found.group(1))
    cmdline = process_cmdline(pid)
    assert cmdline is not None, "the kept server is gone"
    try:
        # Used after the demo ended, for longer than a dying server would last: a second
        # demo on the kept server, the printed link, and a refused takeover.
        again = run_cli("demo", "--auto-approve", env=env, timeout=300)
        assert again.returncode == 0, again.stdout + again.stderr
        assert f"using the server that answers at {address}" in again.stdout
        assert link.group(1).startswith(f"http://127.0.0.1:{ui_port}/namespaces/default/")
        page = httpx.get(link.group(1), timeout=30)
        assert page.status_code == 200
        other = run_cli(
            "server", "--data-dir", str(tmp_path), "--port", str(free_port()), "--headless",
            env=env,
        )  # fmt: skip
        assert other.returncode == 2 and f"kill {pid}" in other.stderr, other.stderr
        assert alive_as(pid, cmdline)
    finally:
        if alive_as(pid, cmdline):
            os.kill(pid, signal.SIGTERM)
        assert wait_until_gone(pid, cmdline)


# -- item 3: the server's port and the UI links ------------------------------------------


def test_server_listens_on_the_port_of_temporal_address(tmp_path: Path) -> None:
    port = free_port()
    process = subprocess.Popen(
        [*PROGRAM, "server", "--headless"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=cli_env(tmp_path, f"127.0.0.1:{port}"),
        text=True,
    )
    assert process.stdout is not None
    banner = process.stdout.readline()
    try:
        assert banner.startswith(f"Temporal dev server at 127.0.0.1:{port} "), banner
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=60)


def test_server_refuses_a_temporal_address_it_cannot_listen_on(tmp_path: Path) -> None:
    # A free port: were the host ignored, the server would start there, never on 7233.
    remote = f"temporal.example.com:{free_port()}"
    result = run_cli("server", "--headless", env=cli_env(tmp_path, remote), timeout=60)
    assert result.returncode == 2
    assert "TEMPORAL_ADDRESS" in result.stderr and "--port" in result.stderr
    assert "Traceback" not in result.stderr


async def test_links_follow_the_ui_port_the_server_was_started_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DURABLE_TOOLS_HOME", str(tmp_path))
    monkeypatch.delenv("TEMPORAL_UI_URL", raising=False)
    port, ui_port = free_port(), free_port()
    address = f"127.0.0.1:{port}"
    server = subprocess.Popen(
        [*PROGRAM, "server", "--data-dir", str(tmp_path / "data"), "--port", str(port),
         "--ui-port", str(ui_port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=cli_env(tmp_path),
        text=True,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        for line in server.stdout:
            if line.startswith("Ctrl-C to stop"):
                break
        # The demo reusing that server prints a link to the UI that is there.
        demo = run_cli("demo", "--auto-approve", env=cli_env(tmp_path, address), timeout=300)
        assert demo.returncode == 0, demo.stdout + demo.stderr
        link = re.search(r"^UI:\s+(\S+)", demo.stdout, re.MULTILINE)
        assert link and link.group(1).startswith(f"http://127.0.0.1:{ui_port}/namespaces/")
        assert httpx.get(link.group(1), timeout=30).status_code == 200
        # And so does `AgentRun.ui_url` of a client on that address.
        tools = DurableTools(await connect(address))
        assert tools.run("some-run").ui_url == (
            f"http://127.0.0.1:{ui_port}/namespaces/default/workflows/some-run"
        )
        monkeypatch.setenv("TEMPORAL_UI_URL", "https://ui.example/")  # the override wins
        assert tools.run("r").ui_url == "https://ui.example/namespaces/default/workflows/r"
    finally:
        server.send_signal(signal.SIGTERM)
        server.communicate(timeout=60)
