"""Span attribute names, and what an activity's outcome is called."""

from __future__ import annotations

import asyncio

from temporalio.exceptions import ApplicationError, CancelledError

__all__ = [
    "AGENT",
    "ATTEMPT",
    "CALL_ID",
    "ERROR_KIND",
    "INPUT_TOKENS",
    "MODEL",
    "OUTCOME",
    "OUTPUT_TOKENS",
    "RUN_ID",
    "TOOL",
    "TURN",
    "error_kind",
    "model_label",
    "outcome_of",
]

AGENT = "durable_tools.agent"
RUN_ID = "durable_tools.run_id"
TURN = "durable_tools.turn"
TOOL = "durable_tools.tool"
CALL_ID = "durable_tools.call_id"
ATTEMPT = "durable_tools.attempt"
OUTCOME = "durable_tools.outcome"
ERROR_KIND = "durable_tools.error_kind"
MODEL = "gen_ai.request.model"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"


def outcome_of(error: BaseException | None) -> str:
    """`ok`, `cancelled` or `error`."""
    if error is None:
        return "ok"
    if isinstance(error, asyncio.CancelledError | CancelledError):
        return "cancelled"
    return "error"


def error_kind(error: BaseException) -> str:
    """The stable kind of a failure: an application error's type (a tool's `ErrorKind`
    value), else the exception's class name."""
    if isinstance(error, ApplicationError) and error.type:
        return error.type
    return type(error).__name__


def model_label(spec: str) -> str:
    """A model spec fit for a metric label: a scripted model's file path is dropped (one
    label per test file would grow the series without bound)."""
    adapter, _, name = spec.partition(":")
    if adapter == "scripted" or not name:
        return adapter
    return spec
