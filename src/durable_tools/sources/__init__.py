"""Tool sources: register tools that live elsewhere (MCP servers, ...) in a `ToolRegistry`.

Each source discovers its tools on the worker, at start-up, and registers them with
their JSON Schema as given; every tool is then an activity of its own, like any other.
The MCP source needs the `mcp` extra (`pip install durable-tools[mcp]`).
"""

from ._mcp import attach_mcp, attach_mcp_sync, mcp_tool_name, refresh_mcp
from ._mcp_pool import McpConnectionError, McpPool, default_mcp_pool
from ._mcp_results import mcp_result_to_tool_result
from ._mcp_servers import FromSecret, McpHttp, McpServer, McpStdio

__all__ = [
    "FromSecret",
    "McpConnectionError",
    "McpHttp",
    "McpPool",
    "McpServer",
    "McpStdio",
    "attach_mcp",
    "attach_mcp_sync",
    "default_mcp_pool",
    "mcp_result_to_tool_result",
    "mcp_tool_name",
    "refresh_mcp",
]
