"""The one interface every model adapter implements, and how a model spec picks one.

A model spec is `PREFIX:REST`, e.g. `scripted:/tmp/steps.json`, `openai:gpt-4o-mini`,
`openai-responses:gpt-5-mini`, `anthropic:claude-sonnet-4-5` or
`pydantic-ai:google-gla:gemini-2.5-pro`.
The prefix names an adapter factory; the factory gets the rest and returns an adapter.
The model activity resolves the spec on every call, so adapters stay cheap to build and
keep their expensive state (HTTP connection pools, parsed scripts) in shared caches.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from ..messages import ModelRequest, ModelResponse
from ._anthropic import AnthropicModel
from ._openai import OpenAIChatModel
from ._openai_responses import OpenAIResponsesModel
from ._pydantic_ai import PydanticAIModel
from ._scripted import ScriptedModel

__all__ = [
    "ModelAdapter",
    "ModelAdapterFactory",
    "register_model_adapter",
    "registered_model_prefixes",
    "resolve_model",
    "unregister_model_adapter",
]


@runtime_checkable
class ModelAdapter(Protocol):
    """Something that answers a model request. Called inside a Temporal activity."""

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Make one model call.

        Raises:
            ModelError: When the call fails; `retryable` says whether trying again helps.
        """
        ...


ModelAdapterFactory = Callable[[str], ModelAdapter]
"""Builds an adapter from the part of a model spec after `PREFIX:`."""


def _scripted(rest: str) -> ModelAdapter:
    return ScriptedModel(rest)


def _openai(rest: str) -> ModelAdapter:
    return OpenAIChatModel(rest)


def _openai_responses(rest: str) -> ModelAdapter:
    return OpenAIResponsesModel(rest)


def _anthropic(rest: str) -> ModelAdapter:
    return AnthropicModel(rest)


def _pydantic_ai(rest: str) -> ModelAdapter:
    return PydanticAIModel(rest)


_BUILTIN: dict[str, ModelAdapterFactory] = {
    "scripted": _scripted,
    "openai": _openai,
    "openai-responses": _openai_responses,
    "anthropic": _anthropic,
    "pydantic-ai": _pydantic_ai,
}
_FORMS: dict[str, str] = {
    "scripted": "scripted:PATH",
    "openai": "openai:MODEL",
    "openai-responses": "openai-responses:MODEL",
    "anthropic": "anthropic:MODEL",
    "pydantic-ai": "pydantic-ai:PROVIDER:MODEL",
}

_factories: dict[str, ModelAdapterFactory] = dict(_BUILTIN)
_lock = threading.Lock()


def register_model_adapter(
    prefix: str, factory: ModelAdapterFactory, *, replace: bool = False
) -> None:
    """Make `PREFIX:REST` model specs resolve through `factory(REST)`.

    Register on the worker before it starts, in every worker process that runs model
    activities: the registry is per process.

    Args:
        prefix: The spec prefix, without the colon, e.g. `anthropic`.
        factory: Called with the rest of the spec on each resolution.
        replace: Allow replacing an existing prefix, built-ins included.

    Raises:
        ValueError: When the prefix is empty, contains `:`, or is taken and not `replace`.
    """
    if not prefix or ":" in prefix or prefix != prefix.strip():
        raise ValueError(f"a model adapter prefix is a non-empty word without ':', got {prefix!r}")
    with _lock:
        if prefix in _factories and not replace:
            raise ValueError(
                f"model adapter prefix {prefix!r} is already registered (pass replace=True)"
            )
        _factories[prefix] = factory


def unregister_model_adapter(prefix: str) -> None:
    """Forget a registered prefix; a built-in one goes back to its built-in adapter."""
    with _lock:
        if prefix in _BUILTIN:
            _factories[prefix] = _BUILTIN[prefix]
        else:
            _factories.pop(prefix, None)


def registered_model_prefixes() -> list[str]:
    """The prefixes `resolve_model` accepts, sorted."""
    with _lock:
        return sorted(_factories)


def _accepted_forms() -> str:
    return ", ".join(_FORMS.get(prefix, f"{prefix}:...") for prefix in registered_model_prefixes())


def resolve_model(spec: str) -> ModelAdapter:
    """The adapter for a model spec such as `openai:gpt-4o-mini`.

    Args:
        spec: `PREFIX:REST`, where PREFIX is `scripted`, `openai`, `openai-responses`,
            `anthropic`, `pydantic-ai` or a registered one.

    Returns:
        A fresh adapter (cheap: shared state lives in module-level caches).

    Raises:
        ValueError: When the prefix is unknown or the rest is empty; the message lists
            the accepted forms.
    """
    prefix, sep, rest = spec.partition(":")
    with _lock:
        factory = _factories.get(prefix) if sep else None
    if factory is None:
        raise ValueError(f"unknown model spec {spec!r}: expected one of {_accepted_forms()}")
    if not rest:
        raise ValueError(
            f"model spec {spec!r} is incomplete: expected {_FORMS.get(prefix, prefix + ':...')}"
        )
    return factory(rest)
