"""Typed progress of a running tool call, carried as its Temporal heartbeat details.

A tool reports progress with `ToolContext.progress(message, fraction=..., partial=...)`.
Each report becomes the activity's heartbeat details: the server keeps only the latest
(`describe()` shows it among the run's pending activities), so progress never grows the
history, and it never enters the conversation, so the model never reads it.

The heartbeat carries one `ProgressBeat`: the latest `Progress`, a short bounded stream of
the reports before it (heartbeats are throttled, so a watcher that polls now and then
still sees the messages sent in between), and the free-form `details` a retried attempt
gets back as `ctx.heartbeat_details` to resume from.
"""

from __future__ import annotations

import json
import math
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = [
    "MAX_PARTIAL_BYTES",
    "MAX_PROGRESS_MESSAGE_CHARS",
    "PROGRESS_KIND",
    "RECENT_PROGRESS",
    "Progress",
    "ProgressBeat",
    "bounded_partial",
    "clean_fraction",
    "clean_message",
    "parse_beat",
]

PROGRESS_KIND: Final = "durable_tools.progress/1"
"""Marks heartbeat details written by `ToolContext.progress` (tells them from other values)."""

MAX_PROGRESS_MESSAGE_CHARS = 500
"""A longer progress message is cut."""

MAX_PARTIAL_BYTES = 8_000
"""Largest partial result (as JSON) a heartbeat carries; a larger one is described instead."""

RECENT_PROGRESS = 8
"""Reports kept in a heartbeat's stream of recent progress (without their partial results)."""


class Progress(BaseModel):
    """One progress report of a running tool call."""

    model_config = ConfigDict(frozen=True)

    message: str | None = None
    """What the tool is doing, for people (cut at `MAX_PROGRESS_MESSAGE_CHARS`)."""
    fraction: float | None = Field(default=None, ge=0.0, le=1.0)
    """How far along the call is, from 0 to 1, when the tool knows."""
    partial: Any = None
    """A partial result (JSON), bounded by `MAX_PARTIAL_BYTES`. Never shown to the model."""
    seq: int = 0
    """1 for the call's first report, then 2, 3, ... (continued across attempts)."""


class ProgressBeat(BaseModel):
    """The heartbeat details of a tool call that reports progress."""

    kind: Literal["durable_tools.progress/1"] = PROGRESS_KIND
    call_id: str = ""
    tool: str = ""
    progress: Progress = Progress()
    """The latest report."""
    recent: list[Progress] = Field(default_factory=list)
    """Up to `RECENT_PROGRESS` reports before the latest one, oldest first, without partials."""
    details: Any = None
    """What the tool asked to get back as `ctx.heartbeat_details` when an attempt resumes."""


def clean_message(message: Any) -> str | None:
    """The display text of a progress message: a string cut to size, else a short JSON form."""
    if message is None:
        return None
    if isinstance(message, str):
        text = message
    else:
        try:
            text = json.dumps(message, ensure_ascii=False, default=str)[:200]
        except (TypeError, ValueError):
            text = repr(message)[:200]
    if len(text) > MAX_PROGRESS_MESSAGE_CHARS:
        text = text[: MAX_PROGRESS_MESSAGE_CHARS - 1] + "…"
    return text


def clean_fraction(fraction: float | None) -> float | None:
    """`fraction` clamped to [0, 1]; None for a value that is not a number.

    A progress display must never fail the tool that reports it, so an out-of-range value
    is clamped rather than refused.
    """
    if fraction is None or isinstance(fraction, bool) or not isinstance(fraction, int | float):
        return None
    if math.isnan(fraction):
        return None
    return min(max(float(fraction), 0.0), 1.0)


def bounded_partial(partial: Any) -> Any:
    """`partial` as JSON data, or a short description when it is too large or not JSON."""
    if partial is None:
        return None
    try:
        text = json.dumps(partial, ensure_ascii=False, default=_no_default)
    except (TypeError, ValueError) as exc:
        return {"omitted": True, "reason": f"not JSON: {type(exc).__name__}"}
    size = len(text.encode("utf-8"))
    if size > MAX_PARTIAL_BYTES:
        return {"omitted": True, "reason": f"{size} bytes, over {MAX_PARTIAL_BYTES}"}
    return json.loads(text)


def _no_default(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    raise TypeError(f"{type(value).__name__} is not JSON")


def parse_beat(value: Any) -> ProgressBeat | None:
    """The `ProgressBeat` in heartbeat details, or None for details of another form."""
    if isinstance(value, ProgressBeat):
        return value
    if not isinstance(value, dict) or value.get("kind") != PROGRESS_KIND:
        return None
    try:
        return ProgressBeat.model_validate(value)
    except ValidationError:
        return None
