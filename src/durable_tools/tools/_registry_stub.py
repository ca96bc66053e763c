"""Tools registered from a schema whose body never runs as an activity.

Sub-agents, flows and callback tools are offered to the model like any tool, but a run
carries them out itself (a child workflow, or a client): their handler only refuses, and
their spec is stamped afterwards with what the run needs to know.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._context import ToolContext
from ._errors import ToolExecutionError
from ._schema_tools import SchemaHandler

__all__ = ["StubTool", "refusing_handler"]


@dataclass(frozen=True)
class StubTool:
    """What `ToolRegistry` registers for a tool it does not run as an activity."""

    name: str
    handler: SchemaHandler
    input_schema: Mapping[str, Any]
    options: dict[str, Any]
    """`register_schema` options (`name=` included)."""
    spec_update: dict[str, Any]
    """Fields set on the registered tool's spec (`transport`, `flow`, `callback`, ...)."""


def refusing_handler(message: str) -> SchemaHandler:
    """A handler that raises `ToolExecutionError(message)`: the tool is never an activity."""

    def not_an_activity(arguments: dict[str, Any], ctx: ToolContext) -> None:
        raise ToolExecutionError(message)

    return not_an_activity
