"""The built-in `search_tools` tool: how a model discovers deferred tools.

It runs inside the workflow (the catalog is already in history), so a search costs no
activity; what it finds is advertised from the next model turn on.
"""

from __future__ import annotations

from durable_tools.messages import ToolDefinition
from durable_tools.tools._catalog import search_specs

__all__ = ["SEARCH_TOOL", "search_definition", "search_specs"]

SEARCH_TOOL = "search_tools"


def search_definition() -> ToolDefinition:
    """What the model is told about `search_tools`."""
    return ToolDefinition(
        name=SEARCH_TOOL,
        description=(
            "Search for more tools by what they do. Tools found become callable from your "
            "next message."
        ),
        parameters={
            "type": "object",
            "properties": {"query": {"type": "string", "description": "What you need to do."}},
            "required": ["query"],
            "additionalProperties": False,
        },
    )
