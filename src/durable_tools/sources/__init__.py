"""Tool sources: register tools that live elsewhere (MCP servers, OpenAPI documents, plain
HTTP endpoints, A2A remote agents) in a `ToolRegistry`.

Each source discovers its tools on the worker, at start-up, and registers them with
their JSON Schema as given; every tool is then an activity of its own, like any other.
Every source is also a `ToolProvider` (connect, discover, close): `ProviderRefresher`
reads providers again on a schedule or on demand, and `apply_discovery` adds, replaces
and withdraws tools as the source changed (docs/sources/index.md).
The MCP source needs the `mcp` extra (`pip install durable-tools[mcp]`), the A2A source
the `a2a` extra.
"""

from ._a2a import A2AError, a2a_tool_name, attach_a2a, attach_a2a_sync
from ._http import http_tool
from ._http_auth import BearerSecret, HeaderSecret, HttpAuth, OAuthBearer, QuerySecret
from ._mcp import McpProvider, attach_mcp, attach_mcp_sync, mcp_tool_name, refresh_mcp
from ._mcp_connection import McpConnectionError
from ._mcp_pool import McpPool, default_mcp_pool
from ._mcp_results import mcp_result_to_tool_result
from ._mcp_servers import FromSecret, McpHttp, McpServer, McpStdio
from ._openapi import attach_openapi, operation_tool_name
from ._openapi_load import load_openapi
from ._openapi_schema import OpenAPIError
from ._provider import (
    MAX_SOURCE_SCHEMA_BYTES,
    CatalogChange,
    Discovered,
    ToolProvider,
    apply_discovery,
)
from ._providers import (
    MIN_REFRESH_EVERY,
    A2AProvider,
    HttpProvider,
    OpenApiProvider,
    ProviderRefresher,
)

__all__ = [
    "MAX_SOURCE_SCHEMA_BYTES",
    "MIN_REFRESH_EVERY",
    "A2AError",
    "A2AProvider",
    "BearerSecret",
    "CatalogChange",
    "Discovered",
    "FromSecret",
    "HeaderSecret",
    "HttpAuth",
    "HttpProvider",
    "McpConnectionError",
    "McpHttp",
    "McpPool",
    "McpProvider",
    "McpServer",
    "McpStdio",
    "OAuthBearer",
    "OpenAPIError",
    "OpenApiProvider",
    "ProviderRefresher",
    "QuerySecret",
    "ToolProvider",
    "a2a_tool_name",
    "apply_discovery",
    "attach_a2a",
    "attach_a2a_sync",
    "attach_mcp",
    "attach_mcp_sync",
    "attach_openapi",
    "default_mcp_pool",
    "http_tool",
    "load_openapi",
    "mcp_result_to_tool_result",
    "mcp_tool_name",
    "operation_tool_name",
    "refresh_mcp",
]
