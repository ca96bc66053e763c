"""What a log record is about: the run, call and tool of the activity that wrote it."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

__all__ = ["current_log_context", "log_context"]

log_context: ContextVar[dict[str, Any] | None] = ContextVar(
    "durable_tools_log_context", default=None
)
"""Set by `TelemetryInterceptor` around each activity; read by `JsonFormatter`. A context
variable, so a sync tool's thread (run with a copied context) carries it too."""


def current_log_context() -> dict[str, Any]:
    """The fields of the activity running in this context (empty outside one)."""
    return dict(log_context.get() or {})
