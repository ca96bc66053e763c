"""A run's client-declared tools as callback specs, for the catalog activity.

The declarations were bounded when the run started (`protocol._client_tools.ClientTool`);
here, on the worker, each becomes a callback tool (`ToolRegistry.callback_tool`) after
the check only the worker can make: no client tool is named like one of the worker's.
A client tool that is gets left out, the worker's tool stands: the catalog is loaded at
a session's start, while its first message's update waits, and a failed catalog would
end the session under that update (docs/agui.md has the endpoint refuse such a name up
front when it is given the registry).
"""

from __future__ import annotations

from durable_tools.protocol._client_tools import CLIENT_TOOL_SOURCE, ClientTool, client_tool_key
from durable_tools.protocol._code_mode import SCRIPT_TOOL
from durable_tools.tools._registry import ToolRegistry
from durable_tools.tools._spec import ToolSpec

__all__ = ["BUILT_IN_TOOLS", "client_tool_clash", "client_tool_specs"]

BUILT_IN_TOOLS = frozenset({SCRIPT_TOOL, "search_tools"})
"""Tools a run adds itself (code mode's, tool search's): no client tool takes their name."""


def client_tool_clash(tools: list[ClientTool], taken: list[str]) -> str | None:
    """Why a client tool may not be declared beside the tools named `taken` (a worker's)
    or the built-in ones, or None.

    Names equal case aside clash: the model would call the server's tool believing it
    the client's, or the other way round, and the client could answer the server's.
    """
    names = {client_tool_key(name): name for name in [*taken, *BUILT_IN_TOOLS]}
    for tool in tools:
        clash = names.get(client_tool_key(tool.name))
        if clash is not None:
            return f"the frontend tool {tool.name!r} is named like the server's tool {clash!r}"
    return None


def client_tool_specs(tools: list[ClientTool], taken: list[ToolSpec]) -> list[ToolSpec]:
    """The callback specs of a run's client-declared tools, leaving out each one that
    clashes with a tool of `taken` (the worker's registry) or a built-in one
    (`client_tool_clash`): the server's tool stands."""
    names = [spec.name for spec in taken]
    registry = ToolRegistry(name_style="provider")
    for tool in tools:
        if client_tool_clash([tool], names) is not None:
            continue
        registry.callback_tool(
            tool.name,
            parameters=tool.parameters,
            timeout=tool.timeout_seconds,
            description=tool.description or f"{tool.name} (a tool of the user's app)",
            source=CLIENT_TOOL_SOURCE,
        )
    return registry.specs()
