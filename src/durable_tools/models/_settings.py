"""`ModelSettings` in each provider's request fields.

Only fields that are set are sent, so a run without settings sends the same body as
before. Each function returns the fields to add to a request body; `extra` comes last
and wins, being the caller's explicit word for that provider.
"""

from __future__ import annotations

from typing import Any

from ..messages import ModelSettings, NamedToolChoice

__all__ = ["anthropic_fields", "chat_fields", "responses_fields"]


def chat_fields(settings: ModelSettings | None, *, has_tools: bool) -> dict[str, Any]:
    """Chat Completions fields. Tool choice and parallel calls are sent only with tools:
    the API rejects them on a request that offers none."""
    if settings is None:
        return {}
    out: dict[str, Any] = {}
    if settings.temperature is not None:
        out["temperature"] = settings.temperature
    if settings.max_output_tokens is not None:
        out["max_completion_tokens"] = settings.max_output_tokens
    if has_tools and settings.tool_choice is not None:
        choice = settings.tool_choice
        out["tool_choice"] = (
            {"type": "function", "function": {"name": choice.name}}
            if isinstance(choice, NamedToolChoice)
            else choice
        )
    if has_tools and settings.parallel_tool_calls is not None:
        out["parallel_tool_calls"] = settings.parallel_tool_calls
    if settings.stop:
        out["stop"] = list(settings.stop)
    if settings.seed is not None:
        out["seed"] = settings.seed
    if settings.reasoning_effort is not None:
        out["reasoning_effort"] = settings.reasoning_effort
    return {**out, **settings.extra}


def responses_fields(settings: ModelSettings | None, *, has_tools: bool) -> dict[str, Any]:
    """Responses API fields. The API has no stop sequences and no seed: those are not
    sent (put a provider's own equivalent in `extra`)."""
    if settings is None:
        return {}
    out: dict[str, Any] = {}
    if settings.temperature is not None:
        out["temperature"] = settings.temperature
    if settings.max_output_tokens is not None:
        out["max_output_tokens"] = settings.max_output_tokens
    if has_tools and settings.tool_choice is not None:
        choice = settings.tool_choice
        out["tool_choice"] = (
            {"type": "function", "name": choice.name}
            if isinstance(choice, NamedToolChoice)
            else choice
        )
    if has_tools and settings.parallel_tool_calls is not None:
        out["parallel_tool_calls"] = settings.parallel_tool_calls
    if settings.reasoning_effort is not None:
        out["reasoning"] = {"effort": settings.reasoning_effort}
    return {**out, **settings.extra}


_ANTHROPIC_CHOICE = {"auto": "auto", "required": "any", "none": "none"}


def anthropic_fields(settings: ModelSettings | None, *, has_tools: bool) -> dict[str, Any]:
    """Messages API fields. `max_output_tokens` replaces the adapter's `max_tokens`;
    parallel calls off is `disable_parallel_tool_use` inside `tool_choice`. The API has
    no seed, and reasoning is its `thinking` budget rather than an effort: both are not
    sent (give `thinking` in `extra`)."""
    if settings is None:
        return {}
    out: dict[str, Any] = {}
    if settings.temperature is not None:
        out["temperature"] = settings.temperature
    if settings.max_output_tokens is not None:
        out["max_tokens"] = settings.max_output_tokens
    if has_tools and (settings.tool_choice is not None or settings.parallel_tool_calls is False):
        choice = settings.tool_choice or "auto"
        tool_choice: dict[str, Any] = (
            {"type": "tool", "name": choice.name}
            if isinstance(choice, NamedToolChoice)
            else {"type": _ANTHROPIC_CHOICE[choice]}
        )
        if settings.parallel_tool_calls is False and tool_choice["type"] != "none":
            tool_choice["disable_parallel_tool_use"] = True
        out["tool_choice"] = tool_choice
    if settings.stop:
        out["stop_sequences"] = list(settings.stop)
    return {**out, **settings.extra}
