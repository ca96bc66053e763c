"""MCP servers as a tool source: each MCP tool becomes a registered tool (an activity).

Discovery runs on the worker, when the worker starts: `await attach_mcp(registry,
server)` lists the server's tools and registers each with its JSON Schema as given.
The tool names, schemas and safety flags then reach runs through the catalog activity,
so the tool list a run saw stays in its history even if the server changes later.

A running worker cannot add activity types, so tools the server adds later are picked
up by `refresh_mcp` before the worker is built, which in practice means at the next
worker start (deploy or restart).
"""

from __future__ import annotations

import asyncio
import fnmatch
import hashlib
import logging
import re
from collections.abc import Collection, Mapping
from typing import Any

from typing_extensions import Unpack

from durable_tools.tools import (
    RegisteredTool,
    ToolContext,
    ToolOptions,
    ToolRegistrationError,
    ToolRegistry,
    ToolResult,
)

from ._mcp_pool import McpPool, default_mcp_pool
from ._mcp_results import mcp_result_to_tool_result
from ._mcp_servers import McpServer

__all__ = ["attach_mcp", "attach_mcp_sync", "mcp_tool_name", "refresh_mcp"]

logger = logging.getLogger("durable_tools.sources.mcp")

_INVALID = re.compile(r"[^a-z0-9_]")
_NOT_DEFAULTS = frozenset({"name", "aliases", "examples"})
"""Options that name or describe one tool: per tool only, never server-wide."""


def mcp_tool_name(tool: str, *, prefix: str | None = None, max_length: int = 64) -> str:
    """The registry name of the MCP tool `tool`: `{prefix}__{tool}`, sanitized.

    Lower-cased; characters outside `[a-z0-9_]` become `_`; a leading non-letter gets a
    `t_` in front; a name over `max_length` is cut and ends with 8 hex digits of the
    original's hash, so distinct long names stay distinct.
    """
    raw = f"{prefix}__{tool}" if prefix else tool
    name = _INVALID.sub("_", raw.lower())
    if not name or not name[0].isalpha():
        name = f"t_{name}"
    if len(name) > max_length:
        digest = hashlib.sha256(raw.encode("utf-8")).hexdigest()[:8]
        name = f"{name[: max_length - 9]}_{digest}"
    return name


def _options_from_annotations(annotations: Mapping[str, Any]) -> dict[str, Any]:
    # Only hints the server actually sent: MCP's defaults (e.g. destructiveHint=true)
    # assume the worst, which is also what our own defaults do.
    options: dict[str, Any] = {}
    if annotations.get("readOnlyHint") is True:
        options["read_only"] = True
    if annotations.get("idempotentHint") is True:
        options["idempotent"] = True
    if annotations.get("destructiveHint") is True and annotations.get("readOnlyHint") is not True:
        options["requires_confirmation"] = True
        options["side_effect"] = "irreversible"
    if annotations.get("openWorldHint") is True:
        options["networked"] = True
    return options


def _selected(name: str, include: Collection[str] | None, exclude: Collection[str] | None) -> bool:
    if include is not None and not any(fnmatch.fnmatchcase(name, p) for p in include):
        return False
    return not (exclude is not None and any(fnmatch.fnmatchcase(name, p) for p in exclude))


def _make_handler(
    pool: McpPool, server: McpServer, mcp_name: str, registry: ToolRegistry, name: str
) -> Any:
    async def call_mcp_tool(arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        policy = registry.get(name).spec.policy
        raw = await pool.call_tool(
            server,
            mcp_name,
            arguments,
            secrets=ctx.secrets or None,
            retry_timeouts=bool(policy.retry.retry_timeouts),
        )
        return mcp_result_to_tool_result(raw, ctx.artifact_store)

    call_mcp_tool.__name__ = name
    call_mcp_tool.__qualname__ = name
    # Marks the handler so refresh_mcp can tell its own registrations from others'.
    call_mcp_tool.mcp_source = (server.key(), mcp_name)  # type: ignore[attr-defined]
    return call_mcp_tool


def _register(
    registry: ToolRegistry,
    server: McpServer,
    listing: list[dict[str, Any]],
    *,
    call_pool: McpPool,
    prefix: str | None,
    include: Collection[str] | None,
    exclude: Collection[str] | None,
    per_tool: Mapping[str, ToolOptions] | None,
    defaults: Mapping[str, Any],
    only_new: bool,
) -> list[RegisteredTool]:
    bad = _NOT_DEFAULTS & set(defaults)
    if bad:
        raise ToolRegistrationError(
            f"attach_mcp: {', '.join(sorted(bad))} cannot apply to every tool of a server; "
            "give it in per_tool",
            rule="options",
        )
    chosen_prefix = server.name if prefix is None else prefix
    per_tool = dict(per_tool or {})
    seen = {str(t.get("name")) for t in listing}
    for unknown in sorted(set(per_tool) - seen):
        logger.warning(
            "per_tool names %r, which MCP server %s does not offer", unknown, server.label
        )

    registered: list[RegisteredTool] = []
    taken: set[str] = set()
    for tool in listing:
        mcp_name = str(tool["name"])
        if not _selected(mcp_name, include, exclude):
            continue
        name = mcp_tool_name(mcp_name, prefix=chosen_prefix, max_length=registry.max_name_length)
        if name in taken:  # two MCP names that sanitize alike ("a.b", "a-b")
            name = mcp_tool_name(
                f"{mcp_name}_{hashlib.sha256(mcp_name.encode()).hexdigest()[:6]}",
                prefix=chosen_prefix,
                max_length=registry.max_name_length,
            )
        taken.add(name)
        if name in registry:
            existing = getattr(registry.get(name).fn, "mcp_source", None)
            if only_new and existing == (server.key(), mcp_name):
                continue
        annotations = tool.get("annotations") or {}
        options: dict[str, Any] = {
            "description": tool.get("description")
            or annotations.get("title")
            or tool.get("title")
            or f"MCP tool {mcp_name} of {server.label}",
            "tags": ("mcp", f"mcp:{chosen_prefix or server.label}"),
            "transport": "mcp",
            "source": f"mcp:{server.name or 'server'}/{mcp_name}",  # never the URL (tokens)
            **_options_from_annotations(annotations),
            **defaults,
            **per_tool.get(mcp_name, {}),
            "name": name,
        }
        if tool.get("outputSchema") is not None and "output_schema" not in options:
            options["output_schema"] = tool["outputSchema"]
        handler = _make_handler(call_pool, server, mcp_name, registry, name)
        input_schema = tool.get("inputSchema") or {"type": "object"}
        registered.append(registry.register_schema(handler, input_schema=input_schema, **options))
    if only_new:
        key = server.key()
        for tool_ in registry.tools():
            source = getattr(tool_.fn, "mcp_source", None)
            if source is not None and source[0] == key and source[1] not in seen:
                logger.warning(
                    "MCP server %s no longer offers %r; it stays registered until the worker "
                    "restarts",
                    server.label,
                    source[1],
                )
    return registered


async def attach_mcp(
    registry: ToolRegistry,
    server: McpServer,
    *,
    prefix: str | None = None,
    include: Collection[str] | None = None,
    exclude: Collection[str] | None = None,
    per_tool: Mapping[str, ToolOptions] | None = None,
    pool: McpPool | None = None,
    secrets: Mapping[str, str] | None = None,
    **defaults: Unpack[ToolOptions],
) -> list[RegisteredTool]:
    """List the MCP server's tools and register each in `registry`.

    Each tool is registered as `{prefix}__{tool}` (sanitized, see `mcp_tool_name`), with
    the server's input schema as given and its description. Safety flags come from the
    tool's MCP annotations when present (`readOnlyHint` -> `read_only`, `idempotentHint`
    -> `idempotent`, `destructiveHint` -> `requires_confirmation`, `openWorldHint` ->
    `networked`); `defaults` override them for every tool, `per_tool` for one tool.

    Call it on the worker before `build_worker`: every registered tool becomes an
    activity of its own, served through `pool`'s shared session to the server.

    Args:
        registry: Where the tools go.
        server: `McpStdio(...)` or `McpHttp(...)`.
        prefix: Tool-name prefix; defaults to `server.name`; `""` for none.
        include: MCP tool names (or glob patterns) to register; None for all.
        exclude: MCP tool names (or glob patterns) to leave out.
        per_tool: Options by MCP tool name (e.g. `{"delete_file": {"approval": True}}`).
        pool: The sessions calls go through; defaults to the process-wide pool.
        secrets: Worker secrets for `FromSecret` headers and environment values during
            discovery; defaults to `DURABLE_TOOLS_SECRET_*` variables. Calls use the
            worker's secrets (`build_worker(secrets=...)`) when it has any.
        **defaults: `ToolOptions` for every tool of the server (`approval=True`,
            `start_to_close_timeout=30`, `read_only=True`, ...).

    Returns:
        The registered tools, in the server's order.

    Raises:
        McpConnectionError: the server cannot be reached.
        ToolRegistrationError: a tool cannot be registered (e.g. its name is taken).
    """
    pool = pool or default_mcp_pool()
    listing = await pool.list_tools(server, secrets=secrets, refresh=True)
    return _register(
        registry,
        server,
        listing,
        call_pool=pool,
        prefix=prefix,
        include=include,
        exclude=exclude,
        per_tool=per_tool,
        defaults=dict(defaults),
        only_new=False,
    )


async def refresh_mcp(
    registry: ToolRegistry,
    server: McpServer,
    *,
    prefix: str | None = None,
    include: Collection[str] | None = None,
    exclude: Collection[str] | None = None,
    per_tool: Mapping[str, ToolOptions] | None = None,
    pool: McpPool | None = None,
    secrets: Mapping[str, str] | None = None,
    **defaults: Unpack[ToolOptions],
) -> list[RegisteredTool]:
    """List the server's tools again and register the ones not yet registered.

    Takes the same arguments as `attach_mcp` and returns only the new tools. A worker
    that is already running cannot serve new activity types: build the worker after
    refreshing (a worker restart picks new tools up). Tools the server dropped stay
    registered (a logged warning says so); calling them gives the model an error.
    """
    pool = pool or default_mcp_pool()
    listing = await pool.list_tools(server, secrets=secrets, refresh=True)
    return _register(
        registry,
        server,
        listing,
        call_pool=pool,
        prefix=prefix,
        include=include,
        exclude=exclude,
        per_tool=per_tool,
        defaults=dict(defaults),
        only_new=True,
    )


def attach_mcp_sync(
    registry: ToolRegistry,
    server: McpServer,
    *,
    prefix: str | None = None,
    include: Collection[str] | None = None,
    exclude: Collection[str] | None = None,
    per_tool: Mapping[str, ToolOptions] | None = None,
    pool: McpPool | None = None,
    secrets: Mapping[str, str] | None = None,
    **defaults: Unpack[ToolOptions],
) -> list[RegisteredTool]:
    """`attach_mcp` for synchronous start-up code (a tools module, before the worker runs).

    Discovery uses a session of its own, closed before returning; calls later open
    their session lazily on the worker's event loop.

    Raises:
        RuntimeError: called from a running event loop; `await attach_mcp(...)` there.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise RuntimeError("attach_mcp_sync cannot run inside an event loop: await attach_mcp")

    async def discover() -> list[dict[str, Any]]:
        scratch = McpPool(connect_timeout=(pool or default_mcp_pool()).connect_timeout)
        try:
            return await scratch.list_tools(server, secrets=secrets)
        finally:
            await scratch.aclose()

    listing = asyncio.run(discover())
    return _register(
        registry,
        server,
        listing,
        call_pool=pool or default_mcp_pool(),
        prefix=prefix,
        include=include,
        exclude=exclude,
        per_tool=per_tool,
        defaults=dict(defaults),
        only_new=False,
    )
