"""The worker's dynamic activity: tools registered after the worker started.

A running Temporal worker cannot add activity types, yet an MCP server may announce new
tools at any time (`notifications/tools/list_changed`). Temporal hands every activity
task whose type no registered activity has to the worker's one dynamic activity; this
one looks the type up in the registry (activity type = tool name, as for every tool)
and runs the tool exactly as its own activity would (`make_tool_activity`). So a tool
added to the registry while the worker runs is served at once, and the Temporal UI
still shows an activity named after the tool.

A type that names no registered tool fails retryably, as Temporal's own "not registered
on this worker" error does: during a rolling deploy another worker of the queue may have
the tool (or the activity), and the call's retry policy bounds the wait.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from temporalio import activity
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError

from durable_tools._activities._runtime import ToolRuntime
from durable_tools._activities._tools import make_tool_activity, to_application_error
from durable_tools._activities._types import ToolInvocation
from durable_tools.tools import RegisteredTool, ToolNotFound

__all__ = ["late_tools_activity"]


def late_tools_activity(runtime: ToolRuntime) -> Callable[..., Awaitable[Any]]:
    """The dynamic activity that serves tools registered after the worker was built.

    `DurableToolsPlugin` adds it to every worker it configures (so `build_worker` has it
    too). It is a dynamic activity: a worker of the plugin's takes no other.
    """
    built: dict[str, tuple[RegisteredTool, Callable[[ToolInvocation], Awaitable[Any]]]] = {}

    @activity.defn(dynamic=True)
    async def late_tool(args: Sequence[RawValue]) -> Any:
        name = activity.info().activity_type
        try:
            invocation = activity.payload_converter().from_payload(args[0].payload, ToolInvocation)
        except Exception as error:  # not a tool activity at all
            raise ApplicationError(
                f"this worker has no activity {name!r} (and its input is not a tool call: "
                f"{type(error).__name__})",
                type="NotFoundError",
            ) from None
        try:
            tool = runtime.registry.get(name)
            if tool.spec.subagent is not None:
                raise ToolNotFound(f"{name!r} is a sub-agent, not an activity")
        except ToolNotFound as error:
            error.message = f"no tool named {name!r} is registered on this worker"
            error.retryable = True  # another worker of the queue may have it
            raise to_application_error(
                error, invocation.call_id, name, runtime.secret_values()
            ) from None
        cached = built.get(name)
        if cached is None or cached[0] is not tool:
            cached = built[name] = (tool, make_tool_activity(tool, runtime))
        return await cached[1](invocation)

    return late_tool
