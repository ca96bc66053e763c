"""`durable-tools tools refresh`: read a project's sources again and say what changed.

The command reads every source of the project file (as a worker starting now would) and
compares the tools with the last read, kept in a small JSON file (`--state`, default
`.durable-tools/tools-read.json` beside the project file): a digest of each tool's spec
by name, never a value of a secret. It cannot reach into running workers (no channel goes
to every worker process): a running worker picks the change up on its own schedule (an
OpenAPI document's `refresh_seconds`, an MCP server's `tools/list_changed`) or when it
restarts.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from durable_tools.tools._registry import ToolRegistry

__all__ = ["ToolsRead", "compare_reads", "default_state_path", "read_digests", "save_read"]

MAX_STATE_BYTES = 8_000_000
"""Largest state file read back: a larger one is not ours (it is read as no last read)."""


@dataclass
class ToolsRead:
    """What changed between the last read and this one, by tool name."""

    added: list[str]
    changed: list[str]
    removed: list[str]
    first: bool


def default_state_path(project_file: str) -> Path:
    """Where the last read is kept: `.durable-tools/tools-read.json` beside the file."""
    return Path(project_file).resolve().parent / ".durable-tools" / "tools-read.json"


def read_digests(registry: ToolRegistry) -> dict[str, str]:
    """Each offered tool's spec digest, by name (withdrawn tools are not offered)."""
    return {
        spec.name: hashlib.sha256(spec.model_dump_json().encode()).hexdigest()
        for spec in registry.specs()
        if not registry.is_withdrawn(spec.name)
    }


def _last(path: Path) -> dict[str, str] | None:
    try:
        if path.stat().st_size > MAX_STATE_BYTES:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    tools = data.get("tools") if isinstance(data, dict) else None
    if not isinstance(tools, dict):
        return None
    return {str(k): str(v) for k, v in tools.items()}


def compare_reads(path: Path, now: dict[str, str]) -> ToolsRead:
    """Compare `now` with the last read kept at `path` (none: a first read)."""
    last = _last(path)
    if last is None:
        return ToolsRead(added=sorted(now), changed=[], removed=[], first=True)
    return ToolsRead(
        added=sorted(set(now) - set(last)),
        changed=sorted(n for n in set(now) & set(last) if now[n] != last[n]),
        removed=sorted(set(last) - set(now)),
        first=False,
    )


def save_read(path: Path, now: dict[str, str]) -> None:
    """Keep this read as the last one (written whole, then renamed: never half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    partial.write_text(json.dumps({"tools": now}, sort_keys=True), encoding="utf-8")
    partial.replace(path)
