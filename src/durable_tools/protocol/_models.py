"""A run's models (the first, then its fallbacks) and the per-model rate limits of a worker.

`AgentConfig(model=[A, B])` is read as `model=A, fallback_models=[B]`: the config keeps
one `model` string, so every reader of `config.model` (and every recorded history, whose
config has no `fallback_models`) sees what it always did. `ModelLimits` is worker
configuration (`DurableToolsPlugin(model_limits=...)`), sent with each reservation to the
model's limiter workflow (`workflows/limiter`, wire types in `protocol/_limiter.py`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "MAX_FALLBACK_MODELS",
    "MAX_MODEL_SPEC_CHARS",
    "ModelLimits",
    "check_fallbacks",
    "checked_model_limits",
    "split_model_list",
]

MAX_FALLBACK_MODELS = 8
"""Most models a run falls back to after its first (each costs a whole retry budget)."""

MAX_MODEL_SPEC_CHARS = 4096
"""Longest model spec a run accepts."""


def split_model_list(data: Any) -> Any:
    """`AgentConfig`'s input with a list `model` split into `model` and `fallback_models`.

    Raises:
        ValueError: the list is empty, holds something other than strings, or
            `fallback_models` is given as well.
    """
    if not isinstance(data, dict) or not isinstance(data.get("model"), list | tuple):
        return data
    models = list(data["model"])
    if not models:
        raise ValueError("model: an empty list names no model")
    if not all(isinstance(spec, str) for spec in models):
        raise ValueError("model: a list of model specs holds only strings")
    if data.get("fallback_models"):
        raise ValueError(
            "give the fallback models in the model list or in fallback_models, not both"
        )
    return {**data, "model": models[0], "fallback_models": models[1:]}


def check_fallbacks(models: list[str], max_attempts: int) -> None:
    """Refuse a model list that could not fall over as documented.

    The first model is checked where a run starts (`check_model_spec`), as it always was:
    a recorded run's config must keep decoding.

    Raises:
        ValueError: a fallback spec is empty or too long, a spec is repeated, or the list
            falls back while `model_max_attempts` is 0 (unlimited: the first model would
            retry for ever).
    """
    for spec in models[1:]:
        if not spec:
            raise ValueError("fallback_models: a model spec is empty")
        if len(spec) > MAX_MODEL_SPEC_CHARS:
            raise ValueError(
                f"fallback_models: model spec too long ({len(spec)} characters, at most "
                f"{MAX_MODEL_SPEC_CHARS})"
            )
    if len(set(models)) != len(models):
        raise ValueError(f"model: each model is listed once, got {models!r}"[:500])
    if len(models) > 1 and max_attempts == 0:
        raise ValueError(
            "model fallback needs a finite model_max_attempts: with 0 (unlimited) the first "
            "model retries for ever and the next is never tried"
        )


_MAX_WINDOW_SECONDS = 3_600.0
"""The longest window a limit is counted over."""


class ModelLimits(BaseModel):
    """How fast a worker's deployment may call one model spec, across all its runs.

    Enforced by one limiter workflow per model spec and task queue on the Temporal server
    (docs/models.md, "Rate limits"): each model call reserves a start time from it before
    calling the provider. Give every worker of the deployment the same limits.

    Attributes:
        requests_per_minute: Most calls started in any window (scaled to `window_seconds`).
        tokens_per_minute: Most tokens (input plus output) in any window, scaled likewise;
            a call is counted by its estimate (input characters / 4 plus
            `max_output_tokens`) until its usage is known.
        window_seconds: The window the limits are counted over: 60 counts per minute, as
            providers do; a shorter one spreads calls more evenly (some providers enforce a
            minute's limit per second, e.g. 600 a minute as 10 a second). A rate under
            one call (or token) a window widens the window to hold exactly one: 0.5
            requests a minute counts one call per 120 s.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    requests_per_minute: float | None = Field(default=None, gt=0, le=1e9, allow_inf_nan=False)
    tokens_per_minute: int | None = Field(default=None, gt=0, le=10**12)
    window_seconds: float = Field(default=60.0, ge=0.1, le=_MAX_WINDOW_SECONDS, allow_inf_nan=False)

    @model_validator(mode="after")
    def _something_limited(self) -> ModelLimits:
        if self.requests_per_minute is None and self.tokens_per_minute is None:
            raise ValueError("ModelLimits needs requests_per_minute or tokens_per_minute")
        # A window holds at least one call and one token: a rate under one a window (0.5
        # requests a minute over 60 s) would be rounded up to one a window, a faster rate
        # than asked. The window widens to hold exactly one instead (120 s for 0.5 a
        # minute), which keeps the rate.
        rates = [r for r in (self.requests_per_minute, self.tokens_per_minute) if r is not None]
        needed = max(60.0 / rate for rate in rates)
        if needed > self.window_seconds:
            if needed > _MAX_WINDOW_SECONDS:
                raise ValueError(
                    f"ModelLimits: a rate under one a {_MAX_WINDOW_SECONDS:.0f} s window "
                    f"({min(rates)} a minute) is not supported"
                )
            object.__setattr__(self, "window_seconds", needed)  # frozen: set once, here
        return self

    @property
    def requests_per_window(self) -> int | None:
        """Calls allowed to start in one window (at least 1)."""
        if self.requests_per_minute is None:
            return None
        return max(1, math.floor(self.requests_per_minute * self.window_seconds / 60))

    @property
    def tokens_per_window(self) -> int | None:
        """Tokens allowed in one window (at least 1)."""
        if self.tokens_per_minute is None:
            return None
        return max(1, math.floor(self.tokens_per_minute * self.window_seconds / 60))


def checked_model_limits(limits: Mapping[str, ModelLimits]) -> dict[str, ModelLimits]:
    """A worker's `model_limits`, checked.

    Raises:
        ValueError: a key is no model spec (`PREFIX:REST`, at most `MAX_MODEL_SPEC_CHARS`)
            or a value is no `ModelLimits`.
    """
    checked = {}
    for spec, value in limits.items():
        if not isinstance(spec, str) or ":" not in spec or len(spec) > MAX_MODEL_SPEC_CHARS:
            raise ValueError(
                f"model_limits: {str(spec)[:200]!r} is not a model spec like 'openai:gpt-4.1'"
            )
        if not isinstance(value, ModelLimits):
            raise ValueError(
                f"model_limits[{spec[:200]!r}] should be ModelLimits, not {type(value).__name__}"
            )
        checked[spec] = value
    return checked
