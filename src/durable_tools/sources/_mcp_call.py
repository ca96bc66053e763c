"""The body of a registered MCP tool: one `tools/call` on the pooled session.

The handler turns the server's progress notifications into the call's progress (its
heartbeat details: shown to people, never to the model), converts the result (images and
audio to the artifact store), and refuses a tool the server no longer offers with a clear
error the model reads. After a call that made the server change its tool list, it waits
for the worker's catalog to follow, so the next run (or the next turn's tool search) sees
the new list.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable
from typing import Any

from durable_tools.tools import (
    NeedsAuthorization,
    ToolContext,
    ToolExecutionError,
    ToolRegistry,
    ToolResult,
)

from ._mcp_input import is_input_required, needs_input_result
from ._mcp_pool import McpPool, ProgressFn
from ._mcp_results import mcp_result_to_tool_result
from ._mcp_servers import McpServer

__all__ = ["bearer_for", "make_handler", "offered_check", "progress_reporter"]


def bearer_for(registry: ToolRegistry, name: str, ctx: ToolContext) -> str | None:
    """The user's OAuth token for a tool that declares `oauth=`, else None (worker headers).

    Raises:
        NeedsAuthorization: the tool needs the user's grant and the call has no token.
    """
    if registry.get(name).spec.oauth is None:
        return None
    if not ctx.access_token:
        raise NeedsAuthorization(f"tool {name!r} needs the user's OAuth grant")
    return ctx.access_token


def progress_reporter(ctx: ToolContext) -> ProgressFn:
    """A callback that reports MCP progress notifications as `ctx.progress(...)`.

    The SDK calls it from the session's receive loop, a task outside the activity: the
    report is handed to the activity's own context (where Temporal's heartbeat works)
    on the event loop.
    """
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()

    def report(done: float, total: float | None, message: str | None) -> None:
        fraction = done / total if total else None
        if message is None:
            message = f"{done:g}/{total:g}" if total else f"{done:g}"
        loop.call_soon_threadsafe(
            lambda: ctx.progress(message, fraction=fraction, details=None), context=context
        )

    return report


def offered_check(pool: McpPool, server: McpServer, mcp_name: str) -> Callable[[Any], bool]:
    """A `visible_to` rule hiding the tool from new catalogs once the server drops it."""

    def offered(_identity: Any) -> bool:
        return pool.offers(server, mcp_name)

    return offered


def make_handler(
    pool: McpPool, server: McpServer, mcp_name: str, registry: ToolRegistry, name: str
) -> Any:
    """The registered function that calls `mcp_name` on `server` through `pool`."""

    async def call_mcp_tool(arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        if not pool.offers(server, mcp_name):
            # The run saw the tool in its catalog; the server has dropped it since. Not
            # ToolNotFound: the model would read only "no tool of that name", not why.
            raise ToolExecutionError(
                f"MCP server {server.label!r} no longer offers the tool {mcp_name!r} (its "
                "tool list changed after this run started), so the call did not run",
                retryable=False,
                details={"tool": name, "mcp_server": server.label},
            )
        policy = registry.get(name).spec.policy
        raw = await pool.call_tool(
            server,
            mcp_name,
            arguments,
            secrets=ctx.secrets or None,
            retry_timeouts=bool(policy.retry.retry_timeouts),
            progress=progress_reporter(ctx),
            bearer=bearer_for(registry, name, ctx),
            input_responses=ctx.input_responses,
            request_state=ctx.request_state,
        )
        if is_input_required(raw):  # the user must answer first: the run pauses for it
            return needs_input_result(raw, server=server.label, tool=name)
        # The server announces a tool-list change before it answers the call that made it.
        await pool.settled(server)
        return mcp_result_to_tool_result(raw, ctx.artifact_store)

    call_mcp_tool.__name__ = name
    call_mcp_tool.__qualname__ = name
    # Marks the handler so refresh_mcp can tell its own registrations from others'.
    call_mcp_tool.mcp_source = (server.key(), mcp_name)  # type: ignore[attr-defined]
    return call_mcp_tool
