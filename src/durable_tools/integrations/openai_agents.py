"""durable-tools' tools for an OpenAI Agents SDK agent run under Temporal's plugin.

`durable_function_tools(runtime)` gives the agent one `FunctionTool` per tool of a
`ToolRuntime`'s catalog. Its invocation runs in workflow code (as the plugin's own
`activity_as_tool` does) and enters the runtime: the call is validated, gated by
durable-tools' approval policy and OAuth, run as the tool's activity and recorded. An
approval waits durably inside the agent's run; a denial, invalid arguments or a failed
tool reach the agent's model as the tool's output.

The plugin (`temporalio-openai-agents`) sets its own payload converter on the client (its
JSON conversion is pydantic's, which durable-tools' types need): give the plugin a client
made with the default data converter, and build durable-tools' worker from that client.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from durable_tools._extras import MissingExtraError, install_hint
from durable_tools.workflows import ToolRuntime

try:
    from agents import FunctionTool
    from agents.tool_context import ToolContext
except ImportError as error:  # pragma: no cover - the extra is installed in CI
    raise MissingExtraError(
        "durable_tools.integrations.openai_agents needs the OpenAI Agents SDK and Temporal's "
        f"plugin for it: {install_hint('openai-agents')}"
    ) from error

__all__ = ["durable_function_tools"]


async def durable_function_tools(
    runtime: ToolRuntime, tools: Sequence[str] | None = None
) -> list[FunctionTool]:
    """One OpenAI Agents `FunctionTool` per tool of the runtime's catalog (call it in the
    workflow, where the agent is built: the catalog loads once, recorded in history).

    Args:
        runtime: The workflow's `ToolRuntime`.
        tools: The tools offered, by name; default the whole catalog.
    """
    wanted = None if tools is None else frozenset(tools)
    return [
        FunctionTool(
            name=spec.name,
            description=runtime.description(spec),
            params_json_schema=spec.input_schema,
            on_invoke_tool=_invoker(runtime, spec.name),
            # The runtime checks the arguments against the tool's own schema, which need
            # not meet OpenAI's strict mode; the model reads what was wrong.
            strict_json_schema=False,
        )
        for spec in await runtime.tools()
        if wanted is None or spec.name in wanted
    ]


def _invoker(runtime: ToolRuntime, name: str) -> Any:
    async def invoke(ctx: ToolContext[Any], arguments: str) -> str:
        reply = await runtime.call(name, arguments, call_id=ctx.tool_call_id)
        return reply.content

    return invoke
