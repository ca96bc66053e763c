"""What a worker cannot serve for want of an optional extra, said when it starts.

A missing SDK otherwise shows only when a run first needs it: a model activity that fails
for good, or a tool call that cannot reach its MCP server. The worker knows at start which
providers it serves (every built-in one) and which sources its registry holds.
"""

from __future__ import annotations

from durable_tools.models import registered_model_prefixes
from durable_tools.models._sdk import require_sdk
from durable_tools.tools._registry import ToolRegistry

__all__ = ["missing_extras"]

# Built-in model providers and the SDK each needs: (spec prefix, module, extra).
_PROVIDER_SDKS = (
    ("openai", "openai", "openai"),
    ("openai-responses", "openai", "openai"),
    ("anthropic", "anthropic", "anthropic"),
    ("pydantic-ai", "pydantic_ai", "pydantic-ai"),
)
# Tool sources by transport: (what they are, module, extra).
_SOURCE_SDKS = {
    "mcp": ("MCP tools", "mcp", "mcp"),
    "a2a": ("A2A agents", "a2a", "a2a"),
}


def _missing(module: str, extra: str) -> str | None:
    try:
        require_sdk(module, extra)
    except ValueError as error:
        return str(error)
    return None


def missing_extras(registry: ToolRegistry | None = None) -> list[str]:
    """One line for each model provider or tool source a worker would serve but cannot,
    with the command that installs what it needs (empty when nothing is missing).

    Args:
        registry: The worker's tools; their sources are checked too.
    """
    notes: list[str] = []
    known = set(registered_model_prefixes())
    for prefix, module, extra in _PROVIDER_SDKS:
        problem = _missing(module, extra) if prefix in known else None
        if problem:
            notes.append(f"model provider {prefix}: runs with {prefix}:MODEL fail; {problem}")
    specs = registry.specs() if registry is not None else []
    for transport, (what, module, extra) in _SOURCE_SDKS.items():
        count = sum(1 for spec in specs if spec.transport == transport)
        problem = _missing(module, extra) if count else None
        if problem:
            tools = f"{count} tool" + ("s" if count > 1 else "")
            notes.append(f"{what} ({tools}): their calls fail; {problem}")
    return notes
