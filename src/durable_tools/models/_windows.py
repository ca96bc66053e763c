"""The context windows of the built-in providers' models, for context compaction.

`AgentConfig(compaction=CompactionConfig())` needs the model's context window in tokens;
for the models below it is known, for any other (a model behind an OpenAI-compatible
server, a scripted one) `CompactionConfig.window_tokens` must say it. A name matches its
longest listed prefix, so dated and suffixed names (`gpt-4o-2024-08-06`,
`claude-sonnet-4-5-20250929`) find their family.

The figures are the providers' published standard windows (input and output together);
a provider's larger beta windows need `window_tokens`. The window is read once, when the
config is built, and recorded with the run: a later change of this table does not change
what a running run decides.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

__all__ = ["KNOWN_CONTEXT_WINDOWS", "context_window"]

KNOWN_CONTEXT_WINDOWS: Final[Mapping[str, Mapping[str, int]]] = MappingProxyType(
    {
        "openai": MappingProxyType(
            {
                "gpt-5": 400_000,
                "gpt-4.1": 1_047_576,
                "gpt-4o": 128_000,
                "gpt-4-turbo": 128_000,
                "gpt-4": 8_192,
                "gpt-3.5-turbo": 16_385,
                "o1-mini": 128_000,
                "o1": 200_000,
                "o3": 200_000,
                "o4-mini": 200_000,
            }
        ),
        "anthropic": MappingProxyType({"claude-": 200_000}),
        "google": MappingProxyType(
            {
                "gemini-1.5-pro": 2_097_152,
                "gemini-1.5-flash": 1_048_576,
                "gemini-2.0-flash": 1_048_576,
                "gemini-2.5": 1_048_576,
            }
        ),
    }
)
"""Context windows in tokens, by provider family, then by model name prefix."""

# The provider family of each model spec prefix (and of Pydantic AI's provider names).
_FAMILIES: Final[Mapping[str, str]] = MappingProxyType(
    {
        "openai": "openai",
        "openai-responses": "openai",
        "anthropic": "anthropic",
        "google-gla": "google",
        "google-vertex": "google",
        "google": "google",
    }
)


def context_window(spec: str) -> int | None:
    """The context window of a model spec's model, in tokens; None when not known.

    Args:
        spec: A model spec such as `openai:gpt-4o-mini`, `anthropic:claude-sonnet-4-5` or
            `pydantic-ai:google-gla:gemini-2.5-pro`.
    """
    prefix, _, rest = spec.partition(":")
    if prefix == "pydantic-ai":
        prefix, _, rest = rest.partition(":")
    family = _FAMILIES.get(prefix)
    if family is None or not rest:
        return None
    name = rest.lower()
    known = KNOWN_CONTEXT_WINDOWS[family]
    matches = [listed for listed in known if name.startswith(listed)]
    return known[max(matches, key=len)] if matches else None
