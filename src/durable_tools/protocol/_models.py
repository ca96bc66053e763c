"""A run's models (the first, then its fallbacks) and the per-model rate limits of a worker.

`AgentConfig(model=[A, B])` is read as `model=A, fallback_models=[B]`: the config keeps
one `model` string, so every reader of `config.model` (and every recorded history, whose
config has no `fallback_models`) sees what it always did. `ModelLimits` is worker
configuration (`DurableToolsPlugin(model_limits=...)`), sent with each reservation to the
model's limiter workflow (`workflows/limiter`).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from durable_tools._wire import WireModel

__all__ = [
    "LIMITER_WORKFLOW",
    "MAX_FALLBACK_MODELS",
    "MAX_LIMITED_CALLS",
    "MAX_MODEL_SPEC_CHARS",
    "RESERVE_UPDATE",
    "SETTLE_SIGNAL",
    "LimitedCall",
    "LimiterInput",
    "ModelLimits",
    "Reservation",
    "ReserveRequest",
    "SettleRequest",
    "book",
    "check_fallbacks",
    "checked_model_limits",
    "limiter_id",
    "settle",
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
            minute's limit per second, e.g. 600 a minute as 10 a second).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    requests_per_minute: float | None = Field(default=None, gt=0, le=1e9, allow_inf_nan=False)
    tokens_per_minute: int | None = Field(default=None, gt=0, le=10**12)
    window_seconds: float = Field(default=60.0, ge=0.1, le=3_600.0, allow_inf_nan=False)

    @model_validator(mode="after")
    def _something_limited(self) -> ModelLimits:
        if self.requests_per_minute is None and self.tokens_per_minute is None:
            raise ValueError("ModelLimits needs requests_per_minute or tokens_per_minute")
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


class ReserveRequest(WireModel):
    """A model call asking its limiter for a start time."""

    limits: ModelLimits
    tokens: int = Field(default=0, ge=0, le=10**12)
    """The call's estimated tokens."""
    max_delay: float = Field(default=60.0, ge=0, le=86_400.0, allow_inf_nan=False)
    """The longest the call can wait; a later slot is not booked (the call retries)."""
    call: str = Field(default="", max_length=200)
    """Names the reservation, for its settlement (`SettleRequest.call`)."""


class Reservation(WireModel):
    """The limiter's answer: start after `delay` seconds, or come back after it."""

    booked: bool
    delay: float = 0.0


class SettleRequest(WireModel):
    """A finished call's real tokens, replacing its estimate in the limiter's window."""

    call: str = Field(max_length=200)
    tokens: int = Field(ge=0, le=10**12)


LIMITER_WORKFLOW = "durable_tools.ModelLimiter"
"""The workflow type of a model's limiter (`workflows/limiter`)."""
RESERVE_UPDATE = "reserve"
SETTLE_SIGNAL = "settle"
MAX_LIMITED_CALLS = 5_000
"""Most calls a limiter keeps in its window (more would make its state, carried over
continue-as-new, too large): a window holding this many is full."""


def limiter_id(task_queue: str, spec: str) -> str:
    """The workflow id of the limiter of model `spec` for the runs of `task_queue`."""
    if len(spec) > 200:
        spec = "sha256-" + hashlib.sha256(spec.encode()).hexdigest()
    return f"durable-tools-model-limit/{task_queue}/{spec}"


class LimitedCall(WireModel):
    """A booked call in a limiter's window."""

    start: float
    """When it may start, in seconds since the epoch (the limiter's clock)."""
    tokens: int = 0
    call: str = ""


class LimiterInput(WireModel):
    """A limiter's start (and continue-as-new) input."""

    spec: str = Field(max_length=MAX_MODEL_SPEC_CHARS)
    calls: list[LimitedCall] = Field(default_factory=list, max_length=MAX_LIMITED_CALLS)


def book(calls: list[LimitedCall], now: float, request: ReserveRequest) -> Reservation:
    """Find the earliest start for `request` that keeps every window within its limits.

    `calls` is sorted by start and updated in place: calls that can no longer share a
    window with a new one are dropped, a booked call is appended. Starts are handed out in
    order (first come, first served), so the list stays sorted. A call whose estimate
    alone passes the tokens of a window waits for a window with nothing else in it.

    Returns:
        A booked reservation with the delay until the start, or, when that delay would
        pass `request.max_delay`, an unbooked one saying how long the wait would be.
    """
    limits = request.limits
    window = limits.window_seconds
    while calls and calls[0].start <= now - window:
        calls.pop(0)
    start = max(now, calls[-1].start) if calls else now
    requests = limits.requests_per_window
    if requests is not None and len(calls) >= requests:
        start = max(start, calls[-requests].start + window)
    if len(calls) >= MAX_LIMITED_CALLS:
        start = max(start, calls[-MAX_LIMITED_CALLS].start + window)
    budget = limits.tokens_per_window
    if budget is not None and calls:
        need = min(request.tokens, budget)
        used = 0
        # The latest calls the new one can share a window with: stop at the first that
        # would take the window's tokens past the budget; it must be out of the window.
        for earlier in reversed(calls):
            used += earlier.tokens
            if used + need > budget:
                start = max(start, earlier.start + window)
                break
    delay = start - now
    if delay > request.max_delay:
        return Reservation(booked=False, delay=delay)
    calls.append(LimitedCall(start=start, tokens=request.tokens, call=request.call))
    return Reservation(booked=True, delay=delay)


def settle(calls: list[LimitedCall], request: SettleRequest) -> None:
    """Replace a booked call's estimate by its real tokens (a call no longer kept: none)."""
    for booked in reversed(calls):
        if booked.call == request.call:
            booked.tokens = request.tokens
            return
