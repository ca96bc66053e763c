"""An MCP server's resources and prompts as tools the agent can call (opt-in).

`attach_mcp(..., resources=True)` registers `{prefix}__list_resources` and
`{prefix}__read_resource(uri)`; `prompts=True` registers `{prefix}__list_prompts` and
`{prefix}__get_prompt(name, arguments)`. They are read-only tools like any other (their
own activities, policies and approvals): the agent decides when to read what, and a
resource the model never asks for never enters the conversation. Binary resource
contents go to the artifact store, as binary tool results do.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from durable_tools.tools import ContentBlock, RegisteredTool, ToolContext, ToolRegistry, ToolResult

from ._mcp_call import bearer_for
from ._mcp_pool import McpPool
from ._mcp_results import mcp_result_to_tool_result
from ._mcp_servers import McpServer

__all__ = ["register_extras"]

_MAX_PAGES = 50
"""Pages of a listing read at most: a server that keeps handing out cursors stops here."""


def _name(prefix: str, tool: str) -> str:
    return f"{prefix}__{tool}" if prefix else tool


async def _paginate(session: Any, method: str, field: str) -> list[dict[str, Any]]:
    import mcp_types  # the optional SDK (see _mcp_pool); a session means it is there

    items: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await getattr(session, method)(params=params)
        items += [
            item.model_dump(mode="json", by_alias=True, exclude_none=True)
            for item in getattr(page, field)
        ]
        cursor = page.next_cursor
        if not cursor:
            break
    return items


def _json_result(value: Any) -> ToolResult:
    text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    return ToolResult(structured=value, content=[ContentBlock(type="json", data=value, text=text)])


def register_extras(
    registry: ToolRegistry,
    server: McpServer,
    pool: McpPool,
    *,
    prefix: str,
    resources: bool,
    prompts: bool,
    defaults: Mapping[str, Any],
) -> list[RegisteredTool]:
    """Register the resource and prompt tools of `server` that were asked for.

    Args:
        registry: Where the tools go.
        server: The server.
        pool: The sessions calls go through.
        prefix: The server's tool-name prefix (`""` for none).
        resources: Register `list_resources` and `read_resource`.
        prompts: Register `list_prompts` and `get_prompt`.
        defaults: `ToolOptions` given to `attach_mcp` for every tool of the server.

    Returns:
        The registered tools.
    """
    label = server.label
    common: dict[str, Any] = {
        "read_only": True,
        "idempotent": True,
        **defaults,
        "tags": ("mcp", f"mcp:{prefix or label}"),
        "transport": "mcp",
    }
    source = f"mcp:{server.name or 'server'}"
    registered: list[RegisteredTool] = []

    async def ask(tool: str, ctx: ToolContext, call: Any, what: str) -> Any:
        bearer = bearer_for(registry, _name(prefix, tool), ctx)
        return await pool.request(
            server, call, what=what, secrets=ctx.secrets or None, bearer=bearer
        )

    def add(tool: str, handler: Any, description: str, schema: dict[str, Any]) -> None:
        name = _name(prefix, tool)
        handler.__name__ = handler.__qualname__ = name
        registered.append(
            registry.register_schema(
                handler,
                input_schema=schema,
                name=name,
                description=description,
                source=f"{source}/{tool}",
                **common,
            )
        )

    if resources:

        async def list_resources(arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
            async def call(session: Any) -> dict[str, Any]:
                return {
                    "resources": await _paginate(session, "list_resources", "resources"),
                    "templates": await _paginate(
                        session, "list_resource_templates", "resource_templates"
                    ),
                }

            listing = await ask("list_resources", ctx, call, "the resource list")
            return _json_result(listing)

        async def read_resource(arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
            uri = str(arguments["uri"])

            async def call(session: Any) -> dict[str, Any]:
                result = await session.read_resource(uri)
                dumped: dict[str, Any] = result.model_dump(
                    mode="json", by_alias=True, exclude_none=True
                )
                return dumped

            read = await ask("read_resource", ctx, call, f"resource {uri!r}")
            blocks = [{"type": "resource", "resource": c} for c in read.get("contents") or ()]
            return mcp_result_to_tool_result({"content": blocks}, ctx.artifact_store)

        add(
            "list_resources",
            list_resources,
            f"List the resources (and URI templates) that MCP server {label} offers.",
            {"type": "object", "properties": {}, "additionalProperties": False},
        )
        add(
            "read_resource",
            read_resource,
            f"Read one resource of MCP server {label} by its URI (see list_resources).",
            {
                "type": "object",
                "properties": {"uri": {"type": "string", "description": "The resource's URI."}},
                "required": ["uri"],
                "additionalProperties": False,
            },
        )

    if prompts:

        async def list_prompts(arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
            async def call(session: Any) -> list[dict[str, Any]]:
                return await _paginate(session, "list_prompts", "prompts")

            found = await ask("list_prompts", ctx, call, "the prompt list")
            return _json_result({"prompts": found})

        async def get_prompt(arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
            name = str(arguments["name"])
            values = {str(k): str(v) for k, v in (arguments.get("arguments") or {}).items()}

            async def call(session: Any) -> dict[str, Any]:
                result = await session.get_prompt(name, values or None)
                dumped: dict[str, Any] = result.model_dump(
                    mode="json", by_alias=True, exclude_none=True
                )
                return dumped

            prompt = await ask("get_prompt", ctx, call, f"prompt {name!r}")
            return _prompt_result(prompt, ctx)

        add(
            "list_prompts",
            list_prompts,
            f"List the prompt templates that MCP server {label} offers, with their arguments.",
            {"type": "object", "properties": {}, "additionalProperties": False},
        )
        add(
            "get_prompt",
            get_prompt,
            f"Fill in one prompt template of MCP server {label} and return its messages.",
            {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The prompt's name."},
                    "arguments": {
                        "type": "object",
                        "additionalProperties": {"type": "string"},
                        "description": "The prompt's arguments, by name (strings).",
                    },
                },
                "required": ["name"],
                "additionalProperties": False,
            },
        )
    return registered


def _prompt_result(prompt: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    """The prompt's messages as text blocks, each starting with its role."""
    blocks: list[ContentBlock] = []
    if prompt.get("description"):
        blocks.append(ContentBlock(type="text", text=f"[prompt: {prompt['description']}]"))
    artifacts = []
    for message in prompt.get("messages") or ():
        converted = mcp_result_to_tool_result(
            {"content": [message.get("content") or {}]}, ctx.artifact_store
        )
        artifacts += converted.artifacts
        for block in converted.content:
            text = f"{message.get('role', 'user')}: {block.text or ''}"
            blocks.append(block.model_copy(update={"text": text}))
    return ToolResult(content=blocks, artifacts=artifacts)
