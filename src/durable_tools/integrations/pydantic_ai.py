"""durable-tools' tools for a Pydantic AI agent run durably on Temporal (`TemporalAgent`).

`DurableToolset` is a Pydantic AI toolset whose calls go through a `ToolRuntime`: the
agent keeps its model, output types and loop; each tool call is validated, gated by
durable-tools' approval policy and OAuth, run as the tool's activity and recorded, as in a
durable-tools agent run. An approval waits durably inside the agent's run (the workflow
stays where it is, across worker restarts) instead of ending the run with deferred tool
requests; a denial, invalid arguments or a failed tool reach the agent's model as the
tool's result.

Pydantic AI's Temporal integration moves the toolsets it knows (function, dynamic and MCP
toolsets) into activities and leaves any other toolset in workflow code
(`pydantic_ai.durable_exec.temporal._toolset.temporalize_toolset`). This toolset is such
another one: its `call_tool` runs in the workflow and enters the runtime there, and the
runtime schedules the tool's own activity. It needs no activity of Pydantic AI's
(`durable_registrations` stays empty): the tools' activities are durable-tools' worker's.

Build the runtime in the workflow's `@workflow.init` and hand the toolset to each run
(`agent.run(..., toolsets=[DurableToolset(self.tools)])`: Pydantic AI accepts a per-run
toolset that is not one it durably wraps), or give the agent a toolset that finds the
current workflow's runtime (`DurableToolset(lambda: workflow.instance().tools, id=...)`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from durable_tools._extras import MissingExtraError, install_hint
from durable_tools.workflows import ToolRuntime

try:
    from pydantic_ai import RunContext
    from pydantic_ai.tools import ToolDefinition
    from pydantic_ai.toolsets import AbstractToolset, ToolsetTool
    from pydantic_core import SchemaValidator, core_schema
except ImportError as error:  # pragma: no cover - the extra is installed in CI
    raise MissingExtraError(
        f"durable_tools.integrations.pydantic_ai needs Pydantic AI: {install_hint('pydantic-ai')}"
    ) from error

__all__ = ["DurableToolset"]

# The runtime validates the arguments against the tool's schema (and tells the model what
# was wrong): Pydantic AI passes them through as the model wrote them.
_ANY_ARGUMENTS = SchemaValidator(schema=core_schema.dict_schema())

RuntimeSource = ToolRuntime | Callable[[], ToolRuntime]
"""A runtime, or how to find the current workflow's (for a toolset built with the agent)."""


class DurableToolset(AbstractToolset[Any]):
    """A Pydantic AI toolset of durable-tools' tools, each call through a `ToolRuntime`.

    Args:
        runtime: The workflow's `ToolRuntime`, or a function that returns it (called in
            workflow code at each use: e.g. `lambda: workflow.instance().tools`).
        id: The toolset's id; `TemporalAgent` requires one for a toolset given to the
            agent itself.
        tools: The tools offered, by name; default every tool of the runtime's catalog.
    """

    def __init__(
        self,
        runtime: RuntimeSource,
        *,
        id: str | None = "durable_tools",
        tools: Sequence[str] | None = None,
    ) -> None:
        self._runtime = runtime
        self._id = id
        self._names = None if tools is None else frozenset(tools)

    @property
    def id(self) -> str | None:
        """The toolset's id."""
        return self._id

    def _current(self) -> ToolRuntime:
        runtime = self._runtime
        return runtime if isinstance(runtime, ToolRuntime) else runtime()

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        """The tools of the runtime's catalog (loaded once, recorded in the workflow)."""
        specs = await self._current().tools()
        return {
            spec.name: ToolsetTool(
                toolset=self,
                tool_def=ToolDefinition(
                    name=spec.name,
                    description=ToolRuntime.description(spec) or None,
                    parameters_json_schema=spec.input_schema,
                ),
                max_retries=0,
                args_validator=_ANY_ARGUMENTS,
            )
            for spec in specs
            if self._names is None or spec.name in self._names
        }

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> str:
        """Run the call through the runtime; the model reads what the runtime answered
        (the result, or why the tool did not run). Waits durably for an approval."""
        reply = await self._current().call(name, tool_args, call_id=ctx.tool_call_id)
        return reply.content
