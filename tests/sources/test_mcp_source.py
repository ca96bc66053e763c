"""MCP servers as a tool source, against real MCP servers (stdio and streamable HTTP)."""

from __future__ import annotations

import asyncio
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_support import SERVER, HttpServer
from temporalio.client import Client

from durable_tools import (
    DurableTools,
    InvalidArguments,
    RunStatus,
    ToolContext,
    ToolExecutionError,
    ToolRegistry,
)
from durable_tools.sources import (
    FromSecret,
    McpConnectionError,
    McpHttp,
    McpPool,
    McpStdio,
    attach_mcp,
    attach_mcp_sync,
    mcp_tool_name,
    refresh_mcp,
)
from support import answer, calls, running_worker, scheduled_activities, write_script


def stdio_server(name: str = "calc") -> McpStdio:
    return McpStdio(sys.executable, (SERVER, "stdio"), name=name)


def ctx(name: str, call_id: str = "c1") -> ToolContext:
    return ToolContext(tool_call_id=call_id, tool_name=name)


@pytest.fixture
async def pool() -> AsyncIterator[McpPool]:
    pool = McpPool(connect_timeout=20)
    yield pool
    await pool.aclose()


@pytest.fixture
def http_server() -> Iterator[HttpServer]:
    server = HttpServer()
    yield server
    server.kill()


# ------------------------------------------------------------------------- discovery


def test_names_are_sanitized_and_bounded() -> None:
    assert mcp_tool_name("Get-Weather.v2", prefix="calc") == "calc__get_weather_v2"
    assert mcp_tool_name("add") == "add"
    assert mcp_tool_name("9lives", prefix="") == "t_9lives"
    long = mcp_tool_name("x" * 80, prefix="srv")
    assert len(long) == 64 and long.startswith("srv__xxx")
    assert long != mcp_tool_name("x" * 81, prefix="srv")  # the hash keeps them apart


async def test_discovery_naming_schemas_and_safety(pool: McpPool) -> None:
    registry = ToolRegistry()
    server = stdio_server()
    tools = await attach_mcp(
        registry,
        server,
        pool=pool,
        exclude=["enable_*", "disable_*", "count_up", "release", "sound", "greet_*", "whoami"],
        per_tool={"echo": {"approval": True, "start_to_close_timeout": 5}},
        heartbeat_timeout=10,
    )
    listing = {t["name"]: t for t in await pool.list_tools(server)}
    names = [t.spec.name for t in tools]
    assert names == [
        "calc__add",
        "calc__echo",
        "calc__fail",
        "calc__slow",
        "calc__delete_file",
        "calc__get_weather_v2",
        "calc__picture",
        "calc__server_state",
    ]
    assert "calc__enable_extra" not in registry
    # Schemas are the server's, as given.
    assert registry.get("calc__add").spec.input_schema == listing["add"]["inputSchema"]
    weather = registry.get("calc__get_weather_v2").spec
    assert weather.input_schema == listing["Get-Weather.v2"]["inputSchema"]
    assert weather.description == "Weather for a city, as structured content."
    # Safety from annotations, options from defaults and per_tool.
    add = registry.get("calc__add").spec
    assert add.safety.read_only and add.safety.idempotent and not add.safety.networked
    delete = registry.get("calc__delete_file").spec
    assert delete.safety.requires_confirmation and delete.safety.networked
    assert delete.safety.side_effect == "irreversible"
    echo = registry.get("calc__echo").spec
    assert echo.approval == "always" and echo.policy.start_to_close_timeout == 5
    assert not echo.safety.read_only and echo.policy.heartbeat_timeout == 10
    assert "mcp" in echo.tags
    # An MCP title is the label people read, unless it could be markup or hide text.
    assert (add.label, add.display_name) == ("Add two numbers", "Add two numbers")
    assert (echo.label, echo.display_name) == (None, "calc__echo")
    # Only the included tools, without a prefix when asked.
    only = await attach_mcp(ToolRegistry(), server, pool=pool, prefix="", include=["a*"])
    assert [t.spec.name for t in only] == ["add"]
    assert pool.connects["calc"] == 1  # one session served both discoveries


async def test_refresh_registers_tools_added_later(pool: McpPool) -> None:
    registry = ToolRegistry()
    server = stdio_server()
    # Not following changes: only the explicit refresh registers what the server added.
    await attach_mcp(registry, server, pool=pool, follow_changes=False)
    assert "calc__extra" not in registry
    await registry.invoke("calc__enable_extra", {}, ctx("calc__enable_extra"))
    added = await refresh_mcp(registry, server, pool=pool)
    assert [t.spec.name for t in added] == ["calc__extra"]
    result = await registry.invoke("calc__extra", {"word": "hi"}, ctx("calc__extra"))
    assert result.content[0].text == "HI"
    assert await refresh_mcp(registry, server, pool=pool) == []


def test_sync_helper_for_worker_start_up_code() -> None:
    registry = ToolRegistry()
    pool = McpPool(connect_timeout=20)
    found: list[Any] = []
    # A thread of its own: start-up code runs before any event loop.
    thread = threading.Thread(
        target=lambda: found.extend(attach_mcp_sync(registry, stdio_server(), pool=pool))
    )
    thread.start()
    thread.join(30)
    assert "calc__add" in [t.spec.name for t in found]
    assert pool.connects["calc"] == 0  # discovery used its own session, already closed


# ----------------------------------------------------------------------------- calls


async def test_calls_over_stdio(pool: McpPool) -> None:
    registry = ToolRegistry()
    await attach_mcp(registry, stdio_server(), pool=pool)

    added = await registry.invoke("calc__add", {"a": 2, "b": 3}, ctx("calc__add"))
    assert added.content[0].text == "5" and added.structured == {"result": 5}
    assert not added.is_error

    weather = await registry.invoke(
        "calc__get_weather_v2", {"city": "Paris"}, ctx("calc__get_weather_v2")
    )
    assert weather.structured == {"city": "Paris", "temperature_c": 21}

    failed = await registry.invoke("calc__fail", {"reason": "no disk"}, ctx("calc__fail"))
    assert failed.is_error and failed.content[0].text == "failed: no disk"

    picture = await registry.invoke("calc__picture", {}, ctx("calc__picture"))
    kinds = [(b.type, b.text) for b in picture.content]
    assert kinds[0] == ("text", "a pixel")
    assert kinds[1][0] == "image" and "image/png" in (kinds[1][1] or "")
    assert picture.content[1].data["omitted"] is True  # bytes never copied

    # Bad arguments never reach the server.
    before = await registry.invoke("calc__server_state", {}, ctx("calc__server_state"))
    with pytest.raises(InvalidArguments):
        await registry.invoke("calc__add", {"a": "two", "b": 3}, ctx("calc__add"))
    after = await registry.invoke("calc__server_state", {}, ctx("calc__server_state"))
    assert after.structured["calls"] == before.structured["calls"]


async def test_http_call_and_reconnect_after_server_restart(
    pool: McpPool, http_server: HttpServer
) -> None:
    await http_server.start()
    registry = ToolRegistry()
    server = McpHttp(http_server.url, headers={"X-Team": "tests"}, name="web")
    await attach_mcp(registry, server, pool=pool)
    first = await registry.invoke("web__add", {"a": 1, "b": 2}, ctx("web__add"))
    assert first.content[0].text == "3"
    pid = (await registry.invoke("web__server_state", {}, ctx("s"))).structured["pid"]

    http_server.kill()
    await http_server.start()  # same port, new process, no memory of our session
    again = await registry.invoke("web__add", {"a": 4, "b": 5}, ctx("web__add", "c2"))
    assert again.content[0].text == "9"
    assert (await registry.invoke("web__server_state", {}, ctx("s"))).structured["pid"] != pid
    assert pool.connects["web"] == 2

    http_server.kill()  # and now it stays down: a retryable error, quickly
    started = time.monotonic()
    with pytest.raises(ToolExecutionError) as raised:
        await registry.invoke("web__add", {"a": 1, "b": 1}, ctx("web__add", "c3"))
    assert raised.value.retryable
    assert time.monotonic() - started < 10


async def test_unreachable_server_and_missing_secret(pool: McpPool) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(McpConnectionError) as raised:
        await attach_mcp(ToolRegistry(), McpHttp(f"http://127.0.0.1:{port}/mcp"), pool=pool)
    assert raised.value.retryable

    secret = McpHttp(
        f"http://127.0.0.1:{port}/mcp",
        headers={"Authorization": FromSecret("mcp_token", "Bearer {}")},
    )
    with pytest.raises(ToolExecutionError) as missing:
        await attach_mcp(ToolRegistry(), secret, pool=pool, secrets={})
    assert not missing.value.retryable and "mcp_token" in missing.value.message


async def test_concurrent_calls_share_one_session(pool: McpPool) -> None:
    registry = ToolRegistry()
    await attach_mcp(registry, stdio_server(), pool=pool)

    async def one(i: int) -> str:
        # Each call in a task of its own, as activities are.
        result = await registry.invoke("calc__slow", {"seconds": 0.5}, ctx("calc__slow", f"c{i}"))
        return result.content[0].text or ""

    started = time.monotonic()
    results = await asyncio.gather(*(asyncio.create_task(one(i)) for i in range(10)))
    elapsed = time.monotonic() - started
    assert results == ["slept 0.5"] * 10
    assert elapsed < 2.5  # they overlapped
    state = await registry.invoke("calc__server_state", {}, ctx("calc__server_state"))
    assert state.structured["max_in_flight"] == 10
    assert pool.connects["calc"] == 1


async def test_cancelled_call_cancels_on_the_server(pool: McpPool) -> None:
    registry = ToolRegistry()
    await attach_mcp(registry, stdio_server(), pool=pool)
    call = asyncio.create_task(registry.invoke("calc__slow", {"seconds": 30}, ctx("calc__slow")))
    await asyncio.sleep(0.5)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    for _ in range(50):
        state = await registry.invoke("calc__server_state", {}, ctx("calc__server_state"))
        if state.structured["cancelled"] == 1:
            break
        await asyncio.sleep(0.05)
    assert state.structured["cancelled"] == 1 and state.structured["in_flight"] == 0
    assert pool.connects["calc"] == 1  # the session survived the cancellation


# ------------------------------------------------------------------------ end to end


async def test_agent_run_calls_an_mcp_tool(
    client: Client, task_queue: str, tmp_path: Path, pool: McpPool
) -> None:
    registry = ToolRegistry()
    await attach_mcp(registry, stdio_server(), pool=pool, include=["add", "echo"])
    model = write_script(
        tmp_path,
        [
            calls(("good", "calc__add", {"a": 2, "b": 3}), ("bad", "calc__add", {"a": "x"})),
            answer("2+3=5"),
        ],
    )
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("add with MCP", model=model)
        result = await run.result()
        conversation = await run.conversation()
    assert result.status == RunStatus.COMPLETED and result.final_answer == "2+3=5"
    replies = {m.tool_call_id: m.content or "" for m in conversation if m.role == "tool"}
    assert replies["good"] == "5"
    assert "b" in replies["bad"]  # the repair message names the missing argument
    history = await run.handle.fetch_history()
    tool_activities = [n for n in scheduled_activities(history) if not n.startswith("durable_")]
    assert tool_activities == ["calc__add"]  # the invalid call never became an activity


def test_a_stdio_server_gets_a_real_stderr_when_sys_stderr_has_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Under Jupyter, an IDE or a test's capture `sys.stderr` has no file descriptor; the
    server process needs one (it failed to start with `UnsupportedOperation: fileno`)."""
    import io

    from durable_tools.sources._mcp_connection import _server_errlog

    monkeypatch.setattr(sys, "stderr", io.StringIO())
    errlog = _server_errlog()
    assert errlog.fileno() >= 0
