"""A real MCP server that changes its tool list under a running worker: a changed schema
replaces the tool, a tool renamed onto another's name is refused, a schema that grows huge
is refused, and a flood of `list_changed` notifications costs a bounded number of lists."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from durable_tools.sources import (
    McpPool,
    McpProvider,
    McpStdio,
    ProviderRefresher,
    attach_mcp,
    refresh_mcp,
)
from durable_tools.sources._mcp import MAX_MCP_SCHEMA_BYTES
from durable_tools.sources._mcp_watch import MIN_REFRESH_INTERVAL
from durable_tools.tools import TOOL_REPLACED, ToolContext, ToolEvent, ToolRegistry

SERVER = str(Path(__file__).with_name("mcp_changing_server.py"))


def changing_server() -> McpStdio:
    return McpStdio(sys.executable, (SERVER, "stdio"), name="chg")


def ctx(name: str) -> ToolContext:
    return ToolContext(tool_call_id="c1", tool_name=name)


@pytest.fixture
async def pool() -> AsyncIterator[McpPool]:
    pool = McpPool(connect_timeout=20)
    yield pool
    await pool.aclose()


async def settle(pool: McpPool) -> None:
    """Wait for the refresh the last call's notification started (bounded by the pool)."""
    await pool.settled(changing_server())
    await asyncio.sleep(0)


async def test_a_changed_schema_replaces_the_tool_with_an_event(pool: McpPool) -> None:
    registry = ToolRegistry()
    replaced: list[ToolEvent] = []
    registry.on(TOOL_REPLACED, replaced.append)
    await attach_mcp(registry, changing_server(), pool=pool)
    before = registry.get("chg__lookup").spec.input_schema
    assert before["required"] == ["city"]
    version = registry.version()

    await registry.invoke("chg__add_units", {}, ctx("chg__add_units"))
    await settle(pool)

    after = registry.get("chg__lookup").spec.input_schema
    assert after["required"] == ["city", "units"]
    assert [e.tool_name for e in replaced] == ["chg__lookup"]
    assert "input_schema" in replaced[0].details["changed"]
    assert registry.version() != version
    result = await registry.invoke(
        "chg__lookup", {"city": "Oslo", "units": "metric"}, ctx("chg__lookup")
    )
    assert result.content[0].text == "v2 Oslo in metric"


async def test_a_tool_renamed_onto_another_sources_name_is_refused(
    pool: McpPool, caplog: pytest.LogCaptureFixture
) -> None:
    registry = ToolRegistry()

    @registry.tool(name="chg__local")
    def mine(text: str) -> str:
        """The worker's own tool."""
        return "mine"

    await attach_mcp(registry, changing_server(), pool=pool)
    with caplog.at_level(logging.WARNING, logger="durable_tools.sources.mcp"):
        await registry.invoke("chg__collide", {}, ctx("chg__collide"))
        await settle(pool)
    assert registry.get("chg__local").fn is mine
    result = await registry.invoke("chg__local", {"text": "x"}, ctx("chg__local"))
    assert result.content[0].text == "mine"
    assert "the name of a tool it does not own" in caplog.text


async def test_a_schema_that_grows_huge_is_refused_and_the_rest_still_follows(
    pool: McpPool, caplog: pytest.LogCaptureFixture
) -> None:
    registry = ToolRegistry()
    await attach_mcp(registry, changing_server(), pool=pool)
    version = registry.version()
    kilobytes = MAX_MCP_SCHEMA_BYTES // 1000 + 50
    with caplog.at_level(logging.WARNING, logger="durable_tools.sources.mcp"):
        await registry.invoke("chg__grow", {"kilobytes": kilobytes}, ctx("chg__grow"))
        await settle(pool)
    assert "chg__huge" not in registry
    assert "over the 256,000-byte limit" in caplog.text
    assert registry.version() == version
    # A later change on the same server is still followed.
    await registry.invoke("chg__add_units", {}, ctx("chg__add_units"))
    await settle(pool)
    assert registry.get("chg__lookup").spec.input_schema["required"] == ["city", "units"]


async def test_a_flood_of_list_changed_lists_a_bounded_number_of_times(pool: McpPool) -> None:
    registry = ToolRegistry()
    replaced: list[ToolEvent] = []
    registry.on(TOOL_REPLACED, replaced.append)
    await attach_mcp(registry, changing_server(), pool=pool)
    await settle(pool)
    version = registry.version()
    start = pool.tool_list_changes["chg"]
    loop = asyncio.get_running_loop()
    began = loop.time()
    await registry.invoke("chg__flood", {"count": 2_000}, ctx("chg__flood"))
    await settle(pool)
    await settle(pool)
    lists = pool.tool_list_changes["chg"] - start
    # At most one list per MIN_REFRESH_INTERVAL (the first at once), however many
    # notifications; and nothing replaced, since nothing changed.
    bound = (loop.time() - began) / MIN_REFRESH_INTERVAL + 1
    assert 1 <= lists <= bound, (lists, bound)
    assert replaced == [] and registry.version() == version


async def test_an_mcp_server_read_on_demand_through_its_provider(pool: McpPool) -> None:
    registry = ToolRegistry()
    provider = McpProvider(changing_server(), pool=pool)
    refresher = ProviderRefresher(registry, [provider])
    await refresher.attach()
    assert registry.get("chg__lookup").spec.input_schema["required"] == ["city"]
    assert not (await refresher.refresh())[provider.label]
    # The server changes; nothing follows its notification here (no attach_mcp watch):
    # the refresh reads it.
    await registry.invoke("chg__add_units", {}, ctx("chg__add_units"))
    change = (await refresher.refresh())[provider.label]
    assert change.changed == ["chg__lookup"]
    assert registry.get("chg__lookup").spec.input_schema["required"] == ["city", "units"]
    # The same ownership as attach_mcp's: refresh_mcp agrees that the tools are this server's.
    assert await refresh_mcp(registry, changing_server(), pool=pool) == []
