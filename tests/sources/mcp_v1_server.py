"""An MCP server written against the `mcp` 1.x SDK (`FastMCP`), for the test that runs a
server pinning an older major version from a virtualenv of its own, over stdio.

Run with that environment's Python: `VENV/bin/python mcp_v1_server.py`.
"""

from __future__ import annotations

import mcp
from mcp.server.fastmcp import Context, FastMCP

server = FastMCP("legacy-v1")


@server.tool()
def sdk_version() -> str:
    """The major version of the MCP SDK this server runs on."""
    from importlib.metadata import version

    return version("mcp")


@server.tool()
async def shout(text: str, ctx: Context) -> str:  # type: ignore[type-arg]
    """Upper-case the text, reporting progress."""
    await ctx.report_progress(1, 1, "shouting")
    return text.upper()


if __name__ == "__main__":
    assert mcp is not None
    server.run("stdio")
