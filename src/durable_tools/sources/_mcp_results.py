"""From an MCP `CallToolResult` (as its wire dict) to a `ToolResult`.

Text stays text; `structuredContent` becomes the structured value; images, audio and
binary resources go to the worker's artifact store and the model reads a short note naming
the artifact (`[image/png stored as artifact file://...]`): their bytes would bloat the
activity result, and the outcome recorded in history could not hold them. Without a store
they are described (type, size) and dropped. `isError: true` stays a result
(`is_error=True`) so the model reads what went wrong.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

from durable_tools.protocol._input_types import INPUT_REQUIRED_KEY
from durable_tools.tools import ArtifactRef, ArtifactStore, ContentBlock, ToolResult

__all__ = ["mcp_result_to_tool_result"]


def _decoded_size(data: Any) -> int:
    if not isinstance(data, str):
        return 0
    return len(data) * 3 // 4 - data[-2:].count("=")


def _stored(data: Any, mime: str, store: ArtifactStore | None) -> ArtifactRef | None:
    """Decode base64 `data` into the store; None without a store or for invalid data."""
    if store is None or not isinstance(data, str):
        return None
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None
    return store.put(raw, mime)


def _artifact_block(kind: str, ref: ArtifactRef) -> ContentBlock:
    note = f"[{kind} {ref.media_type} stored as artifact {ref.uri} ({ref.size} bytes)]"
    return ContentBlock(type="text", text=note, artifact=ref)


def _block(item: Mapping[str, Any], store: ArtifactStore | None) -> ContentBlock:
    kind = item.get("type")
    if kind == "text":
        return ContentBlock(type="text", text=str(item.get("text", "")))
    if kind in ("image", "audio"):
        mime = str(item.get("mimeType") or "application/octet-stream")
        ref = _stored(item.get("data"), mime, store)
        if ref is not None:
            return _artifact_block(str(kind), ref)
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
        mime = str(resource.get("mimeType") or "application/octet-stream")
        ref = _stored(resource.get("blob"), mime, store)
        if ref is not None:
            return _artifact_block(f"resource {resource.get('uri')}", ref)
        size = _decoded_size(resource.get("blob"))
        return ContentBlock(
            type="text", text=f"[resource {resource.get('uri')} ({mime}, {size} bytes), not shown]"
        )
    return ContentBlock(type="text", text=f"[{kind} content, not shown]")


def mcp_result_to_tool_result(
    raw: Mapping[str, Any], store: ArtifactStore | None = None
) -> ToolResult:
    """Convert a `CallToolResult` wire dict (camelCase keys) into a `ToolResult`.

    Args:
        raw: The result as the server sent it.
        store: Where images, audio and binary resources go (the call's
            `ToolContext.artifact_store`); without one they are described and dropped.
    """
    blocks = [_block(item, store) for item in raw.get("content") or () if isinstance(item, Mapping)]
    structured = raw.get("structuredContent")
    if isinstance(structured, Mapping) and INPUT_REQUIRED_KEY in structured:
        # Only this client's own input-required handling may pause a run for a person:
        # a server cannot forge the marker in a result.
        structured = {k: v for k, v in structured.items() if k != INPUT_REQUIRED_KEY}
    if structured is not None and not any(b.type == "text" for b in blocks):
        text = json.dumps(structured, ensure_ascii=False, separators=(", ", ": "))
        blocks.append(ContentBlock(type="json", data=structured, text=text))
    return ToolResult(
        content=blocks,
        structured=structured,
        is_error=bool(raw.get("isError")),
        artifacts=[b.artifact for b in blocks if b.artifact is not None],
    )
