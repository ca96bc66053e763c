"""From an MCP `CallToolResult` (as its wire dict) to a `ToolResult`.

Text stays text; `structuredContent` becomes the structured value; images, audio and
binary resources are described (type, size), never copied: their bytes would only
bloat the activity result, and the outcome recorded in history could not hold them.
`isError: true` stays a result (`is_error=True`) so the model reads what went wrong.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from durable_tools.tools import ContentBlock, ToolResult

__all__ = ["mcp_result_to_tool_result"]


def _decoded_size(data: Any) -> int:
    if not isinstance(data, str):
        return 0
    return len(data) * 3 // 4 - data[-2:].count("=")


def _block(item: Mapping[str, Any]) -> ContentBlock:
    kind = item.get("type")
    if kind == "text":
        return ContentBlock(type="text", text=str(item.get("text", "")))
    if kind in ("image", "audio"):
        mime = str(item.get("mimeType") or "application/octet-stream")
        size = _decoded_size(item.get("data"))
        meta = {"mime_type": mime, "size_bytes": size, "omitted": True}
        note = f"[{kind} {mime}, {size} bytes, not shown]"
        if kind == "image":
            return ContentBlock(type="image", text=note, data=meta)
        return ContentBlock(type="text", text=note, data=meta)
    if kind == "resource_link":
        name = item.get("name") or item.get("uri")
        return ContentBlock(type="text", text=f"[resource {name}: {item.get('uri')}]")
    if kind == "resource":
        resource = item.get("resource") or {}
        if "text" in resource:
            return ContentBlock(type="text", text=str(resource["text"]))
        mime = resource.get("mimeType") or "application/octet-stream"
        size = _decoded_size(resource.get("blob"))
        return ContentBlock(
            type="text", text=f"[resource {resource.get('uri')} ({mime}, {size} bytes), not shown]"
        )
    return ContentBlock(type="text", text=f"[{kind} content, not shown]")


def mcp_result_to_tool_result(raw: Mapping[str, Any]) -> ToolResult:
    """Convert a `CallToolResult` wire dict (camelCase keys) into a `ToolResult`."""
    blocks = [_block(item) for item in raw.get("content") or () if isinstance(item, Mapping)]
    structured = raw.get("structuredContent")
    if structured is not None and not any(b.type == "text" for b in blocks):
        text = json.dumps(structured, ensure_ascii=False, separators=(", ", ": "))
        blocks.append(ContentBlock(type="json", data=structured, text=text))
    return ToolResult(content=blocks, structured=structured, is_error=bool(raw.get("isError")))
