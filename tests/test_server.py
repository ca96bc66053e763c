"""The embedded dev server, against the real `temporal` binary (no mocks)."""

from __future__ import annotations

import socket
import uuid
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.client import Client, WorkflowExecutionStatus

from durable_tools.connection import connect
from durable_tools.search_attributes import SEARCH_ATTRIBUTES
from durable_tools.server import (
    DevServer,
    DevServerError,
    ensure_server,
    find_temporal_cli,
    ui_url,
)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def custom_attributes(client: Client) -> dict[str, int]:
    response = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=client.namespace)
    )
    return dict(response.custom_attributes)


def test_find_temporal_cli() -> None:
    assert Path(find_temporal_cli()).name.startswith("temporal")


def test_ui_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TEMPORAL_UI_URL", raising=False)
    assert ui_url("default", "run-1") == "http://127.0.0.1:8233/namespaces/default/workflows/run-1"
    assert ui_url("default", "a/b c").endswith("/workflows/a%2Fb%20c")
    monkeypatch.setenv("TEMPORAL_UI_URL", "https://temporal.example/")
    assert ui_url("ns", "x") == "https://temporal.example/namespaces/ns/workflows/x"


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
