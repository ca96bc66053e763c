"""What a worker cannot serve for want of an optional extra, said when it starts.

A missing SDK otherwise shows only when a run first needs it: a model activity that fails
for good, or a tool call that cannot reach its MCP server. The worker knows at start which
providers it serves (every built-in one) and which sources its registry holds.
"""

from __future__ import annotations

from durable_tools._extras import install_hint
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
# Code mode's sandbox, which the script-step activity imports when a run asks for it.
_CODE_MODE_SDK = ("pydantic_monty", "code")


def _missing(module: str, extra: str) -> str | None:
    try:
        require_sdk(module, extra)
    except ValueError as error:
        return str(error)
    return None


def missing_extras(registry: ToolRegistry | None = None) -> list[str]:
    """What a worker would serve but cannot for want of an extra, with the command that
    installs it (empty when nothing is missing).

    At most one line for the model providers together (a worker serves every built-in
    provider, and most deployments use one or two: a line for each missing SDK buried the
    line that mattered), one for code mode's sandbox, and one for each tool source of the
    registry whose SDK is missing.

    Args:
        registry: The worker's tools; their sources are checked too.
    """
    notes: list[str] = []
    known = set(registered_model_prefixes())
    providers = [
        (prefix, extra)
        for prefix, module, extra in _PROVIDER_SDKS
        if prefix in known and _missing(module, extra)
    ]
    if providers:
        names = ", ".join(prefix for prefix, _ in providers)
        extras = sorted({extra for _, extra in providers})
        notes.append(
            f"model providers not installed: {names} (runs naming them fail); "
            f"{install_hint(*extras)}"
        )
    module, extra = _CODE_MODE_SDK
    if _missing(module, extra):
        notes.append(
            "code mode cannot run on this worker (runs with AgentConfig.code_mode fail): "
            f"its sandbox is not installed; {install_hint(extra)}"
        )
    specs = registry.specs() if registry is not None else []
    for transport, (what, module, extra) in _SOURCE_SDKS.items():
        count = sum(1 for spec in specs if spec.transport == transport)
        problem = _missing(module, extra) if count else None
        if problem:
            tools = f"{count} tool" + ("s" if count > 1 else "")
            notes.append(f"{what} ({tools}): their calls fail; {problem}")
    return notes
