"""MCP servers as a tool source: each MCP tool becomes a registered tool (an activity).

Discovery runs on the worker, when the worker starts: `await attach_mcp(registry,
server)` lists the server's tools and registers each with its JSON Schema as given.
The tool names, schemas and safety flags then reach runs through the catalog activity,
so the tool list a run saw stays in its history even if the server changes later.

The worker follows the server's `notifications/tools/list_changed`: it lists again,
registers the new tools (served by the worker's dynamic activity, see
`_mcp_activity.py`, since a running worker cannot add activity types), replaces the
tools whose schema, description or annotations changed (`tool.replaced`) and withdraws
the dropped ones (`tool.withdrawn`: hidden from catalogs; a run that calls one gets a tool
error). A listed name that another source's tool holds is refused, never taken over.
Running runs read the changed catalog before their next model turn.
"""

from __future__ import annotations

import asyncio
import fnmatch
import hashlib
import logging
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from typing_extensions import Unpack

from durable_tools.tools import (
    Identity,
    RegisteredTool,
    ToolOptions,
    ToolRegistrationError,
    ToolRegistry,
)
from durable_tools.tools._spec import MAX_LABEL_CHARS, label_problem

from ._mcp_call import make_handler, offered_check
from ._mcp_extras import register_extras
from ._mcp_pool import McpPool, default_mcp_pool
from ._mcp_servers import McpServer, McpStdio
from ._provider import MAX_SOURCE_SCHEMA_BYTES, Discovered, apply_discovery, fingerprint

__all__ = [
    "MAX_MCP_SCHEMA_BYTES",
    "McpProvider",
    "attach_mcp",
    "attach_mcp_sync",
    "mcp_owner",
    "mcp_tool_name",
    "refresh_mcp",
]

logger = logging.getLogger("durable_tools.sources.mcp")

MAX_MCP_SCHEMA_BYTES = MAX_SOURCE_SCHEMA_BYTES
"""Largest input schema (as JSON) an MCP tool may have: every source's limit
(`MAX_SOURCE_SCHEMA_BYTES`), under the name MCP users know."""

_INVALID = re.compile(r"[^a-z0-9_]")
_NOT_DEFAULTS = frozenset({"name", "aliases", "examples", "label"})
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


def _label_from_title(title: object) -> dict[str, str]:
    """The tool's MCP `title` as its display label, when it can be one.

    A title is the server's text, shown to people: one that is too long or holds characters
    a label may not (markup, controls, hidden characters; `label_problem`) is not used, and
    people read the tool's name instead.
    """
    if not isinstance(title, str):
        return {}
    label = " ".join(title.split())
    if not label or len(label) > MAX_LABEL_CHARS or label_problem(label) is not None:
        return {}
    return {"label": label}


def _selected(name: str, include: Collection[str] | None, exclude: Collection[str] | None) -> bool:
    if include is not None and not any(fnmatch.fnmatchcase(name, p) for p in include):
        return False
    return not (exclude is not None and any(fnmatch.fnmatchcase(name, p) for p in exclude))


def _both(
    first: Callable[[Identity], bool], second: Callable[[Identity], bool] | None
) -> Callable[[Identity], bool]:
    if second is None:
        return first
    return lambda identity: first(identity) and second(identity)


def _discovered(
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
) -> list[Discovered]:
    """The server's listed tools (those selected) as `Discovered` tools of `registry`."""
    bad = _NOT_DEFAULTS & set(defaults)
    if bad:
        raise ToolRegistrationError(
            f"attach_mcp: {', '.join(sorted(bad))} cannot apply to every tool of a server; "
            "give it in per_tool",
            rule="options",
        )
    if isinstance(server, McpStdio) and (
        defaults.get("oauth") or any(o.get("oauth") for o in (per_tool or {}).values())
    ):
        raise ToolRegistrationError(
            f"attach_mcp: MCP server {server.label} runs over stdio, where no user's OAuth "
            "token can be sent; oauth= needs an McpHttp server",
            rule="options",
        )
    chosen_prefix = server.name if prefix is None else prefix
    per_tool = dict(per_tool or {})
    seen = {str(t.get("name")) for t in listing}
    for unknown in sorted(set(per_tool) - seen):
        logger.warning(
            "per_tool names %r, which MCP server %s does not offer", unknown, server.label
        )

    discovered: list[Discovered] = []
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
        annotations = tool.get("annotations") or {}
        options: dict[str, Any] = {
            "description": tool.get("description")
            or annotations.get("title")
            or tool.get("title")
            or f"MCP tool {mcp_name} of {server.label}",
            "tags": ("mcp", f"mcp:{chosen_prefix or server.label}"),
            "transport": "mcp",
            "source": f"mcp:{server.name or 'server'}/{mcp_name}",  # never the URL (tokens)
            **_label_from_title(tool.get("title") or annotations.get("title")),
            **_options_from_annotations(annotations),
            **defaults,
            **per_tool.get(mcp_name, {}),
            "name": name,
        }
        if tool.get("outputSchema") is not None and "output_schema" not in options:
            options["output_schema"] = tool["outputSchema"]
        options["visible_to"] = _both(
            offered_check(call_pool, server, mcp_name), options.get("visible_to")
        )
        input_schema = tool.get("inputSchema") or {"type": "object"}

        def register(
            replace: bool,
            mcp_name: str = mcp_name,
            name: str = name,
            input_schema: Any = input_schema,
            options: dict[str, Any] = options,
        ) -> RegisteredTool:
            handler = make_handler(call_pool, server, mcp_name, registry, name)
            return registry.register_schema(
                handler, input_schema=input_schema, replace=replace, **options
            )

        discovered.append(
            Discovered(
                name=name,
                fingerprint=fingerprint(tool),
                register=register,
                input_schema=input_schema,
                origin=mcp_name,
            )
        )
    return discovered


def _register(
    registry: ToolRegistry,
    server: McpServer,
    listing: list[dict[str, Any]],
    *,
    only_new: bool,
    **options: Any,
) -> list[RegisteredTool]:
    discovered = _discovered(registry, server, listing, **options)
    label = f"MCP server {server.label}"
    change = apply_discovery(registry, mcp_owner(server), label, discovered, initial=not only_new)
    return change.registered


def mcp_owner(server: McpServer) -> str:
    """The provider owner key of an MCP server (see `ToolProvider.owner`)."""
    return f"mcp:{server.key()}"


@dataclass
class _Attachment:
    """One `attach_mcp` call: what it registers, so a tool-list change can do it again."""

    registry: ToolRegistry
    server: McpServer
    pool: McpPool
    prefix: str | None
    include: Collection[str] | None
    exclude: Collection[str] | None
    per_tool: Mapping[str, ToolOptions] | None
    defaults: dict[str, Any]
    secrets: Mapping[str, str] | None

    def register(self, listing: list[dict[str, Any]], *, only_new: bool) -> list[RegisteredTool]:
        return _register(
            self.registry,
            self.server,
            listing,
            call_pool=self.pool,
            prefix=self.prefix,
            include=self.include,
            exclude=self.exclude,
            per_tool=self.per_tool,
            defaults=self.defaults,
            only_new=only_new,
        )

    async def refresh(self) -> list[RegisteredTool]:
        listing = await self.pool.list_tools(self.server, secrets=self.secrets, refresh=True)
        return self.register(listing, only_new=True)

    async def follow(self) -> None:
        """Called by the pool when the server's tool list changed."""
        added = await self.refresh()
        if added:
            logger.info(
                "MCP server %s added or changed %s: served from now on without a restart",
                self.server.label,
                ", ".join(t.spec.name for t in added),
            )
        for tool in added:
            if tool.spec.policy.limited:
                logger.warning(
                    "tool %s has max_concurrent/rate_limit: its own task queue gets a worker "
                    "only at the next worker start",
                    tool.spec.name,
                )


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
    follow_changes: bool = True,
    resources: bool = False,
    prompts: bool = False,
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
        follow_changes: Follow the server's `notifications/tools/list_changed` while the
            worker runs: new tools are registered (and reach new runs), dropped ones are
            hidden from new runs.
        resources: Also register `{prefix}__list_resources` and
            `{prefix}__read_resource(uri)` (read-only tools).
        prompts: Also register `{prefix}__list_prompts` and
            `{prefix}__get_prompt(name, arguments)` (read-only tools).
        **defaults: `ToolOptions` for every tool of the server (`approval=True`,
            `start_to_close_timeout=30`, `read_only=True`, ...).

    Returns:
        The registered tools, in the server's order (resource and prompt tools last).

    Raises:
        McpConnectionError: the server cannot be reached.
        ToolRegistrationError: a tool cannot be registered (e.g. its name is taken).
    """
    pool = pool or default_mcp_pool()
    listing = await pool.list_tools(server, secrets=secrets, refresh=True)
    attachment = _Attachment(
        registry, server, pool, prefix, include, exclude, per_tool, dict(defaults), secrets
    )
    registered = attachment.register(listing, only_new=False)
    registered += _extras(attachment, resources=resources, prompts=prompts)
    if follow_changes:
        pool.watch_tools(server, attachment.follow)
    return registered


def _extras(attachment: _Attachment, *, resources: bool, prompts: bool) -> list[RegisteredTool]:
    if not (resources or prompts):
        return []
    server = attachment.server
    chosen = server.name if attachment.prefix is None else attachment.prefix
    return register_extras(
        attachment.registry,
        server,
        attachment.pool,
        prefix=chosen or "",
        resources=resources,
        prompts=prompts,
        defaults={k: v for k, v in attachment.defaults.items() if k not in _NOT_DEFAULTS},
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
    """List the server's tools again: register the new ones, replace the changed ones.

    Takes the same arguments as `attach_mcp` and returns the new and replaced tools. A
    running worker does this by itself when the server announces a change
    (`follow_changes`); call it to pick up a change the server did not announce. Tools
    the server dropped are withdrawn (hidden from catalogs; calling one from a run that
    still lists it gives the model an error).
    """
    pool = pool or default_mcp_pool()
    attachment = _Attachment(
        registry, server, pool, prefix, include, exclude, per_tool, dict(defaults), secrets
    )
    return await attachment.refresh()


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
    follow_changes: bool = True,
    resources: bool = False,
    prompts: bool = False,
    **defaults: Unpack[ToolOptions],
) -> list[RegisteredTool]:
    """`attach_mcp` for synchronous start-up code (a tools module, before the worker runs).

    Discovery uses a session of its own, closed before returning; calls later open
    their session lazily on the worker's event loop (and, following changes, list the
    tools again then).

    Raises:
        RuntimeError: called from a running event loop; `await attach_mcp(...)` there.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise RuntimeError("attach_mcp_sync cannot run inside an event loop: await attach_mcp")

    call_pool = pool or default_mcp_pool()

    async def discover() -> list[dict[str, Any]]:
        scratch = McpPool(connect_timeout=call_pool.connect_timeout)
        try:
            return await scratch.list_tools(server, secrets=secrets)
        finally:
            await scratch.aclose()

    listing = asyncio.run(discover())
    attachment = _Attachment(
        registry, server, call_pool, prefix, include, exclude, per_tool, dict(defaults), secrets
    )
    registered = attachment.register(listing, only_new=False)
    registered += _extras(attachment, resources=resources, prompts=prompts)
    if follow_changes:
        call_pool.watch_tools(server, attachment.follow)
    return registered


class McpProvider:
    """An MCP server as a `ToolProvider`: `attach_mcp`'s discovery, read when asked.

    A worker follows an MCP server's own `tools/list_changed` (`attach_mcp`); this is for
    reading it on a schedule or on demand too (`ProviderRefresher`, `durable-tools tools
    refresh`). Takes `attach_mcp`'s arguments.
    """

    def __init__(
        self,
        server: McpServer,
        *,
        prefix: str | None = None,
        include: Collection[str] | None = None,
        exclude: Collection[str] | None = None,
        per_tool: Mapping[str, ToolOptions] | None = None,
        pool: McpPool | None = None,
        secrets: Mapping[str, str] | None = None,
        **defaults: Unpack[ToolOptions],
    ) -> None:
        self.server = server
        self.owner = mcp_owner(server)
        self.label = f"MCP server {server.label}"
        self._pool = pool
        self._options: dict[str, Any] = {
            "prefix": prefix,
            "include": include,
            "exclude": exclude,
            "per_tool": per_tool,
            "defaults": dict(defaults),
        }
        self._secrets = secrets

    @property
    def pool(self) -> McpPool:
        """The sessions discovery and calls go through (the process-wide pool by default)."""
        if self._pool is None:
            self._pool = default_mcp_pool()
        return self._pool

    async def connect(self) -> None:
        """Open the session to the server (listing its tools once)."""
        await self.pool.list_tools(self.server, secrets=self._secrets)

    async def discover(self, registry: ToolRegistry) -> list[Discovered]:
        """List the server's tools again."""
        listing = await self.pool.list_tools(self.server, secrets=self._secrets, refresh=True)
        return _discovered(registry, self.server, listing, call_pool=self.pool, **self._options)

    async def close(self) -> None:
        """Nothing to close: the pool's sessions serve the tools' calls too."""
