"""Structured logs: one JSON object per line, carrying run id, call id and tool."""

from __future__ import annotations

import json
import logging
import os
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

from durable_tools.telemetry._logcontext import current_log_context

__all__ = ["LOG_FORMAT_ENV", "JsonFormatter", "configure_logging"]

LOG_FORMAT_ENV = "DURABLE_TOOLS_LOG_FORMAT"

# temporalio's logger adapters put the activity's / workflow's info on the record under
# these names (`activity.logger`, `workflow.logger`): which of their keys to keep.
_TEMPORAL_EXTRAS = {
    "temporal_activity": {
        "workflow_id": "run_id",
        "workflow_run_id": "temporal_run_id",
        "activity_id": "activity_id",
        "activity_type": "activity",
        "attempt": "activity_attempt",
    },
    "temporal_workflow": {
        "workflow_id": "run_id",
        "run_id": "temporal_run_id",
        "workflow_type": "workflow",
    },
}


class JsonFormatter(logging.Formatter):
    """Formats a record as one JSON object: time, level, logger, message, then the run id,
    call id and tool of the activity that logged it (from `TelemetryInterceptor`'s log
    context and temporalio's `temporal_activity` / `temporal_workflow` extras)."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for extra, keys in _TEMPORAL_EXTRAS.items():
            info = getattr(record, extra, None)
            if isinstance(info, dict):
                for key, name in keys.items():
                    if info.get(key) is not None:
                        entry.setdefault(name, info[key])
        for key, value in current_log_context().items():
            entry.setdefault(key, value)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def configure_logging(
    log_format: str | None = None, *, level: int = logging.INFO, stream: TextIO | None = None
) -> bool:
    """Send the root logger's records to `stream` (stderr) as JSON lines, when asked.

    Args:
        log_format: `json` or `text`; default `DURABLE_TOOLS_LOG_FORMAT`, else `text`
            (nothing is configured: the process keeps its logging as it is).
        level: The root logger's level when JSON logging is set up.
        stream: Where the lines go (default stderr).

    Returns:
        Whether JSON logging was set up.

    Raises:
        ValueError: an unknown format.
    """
    chosen = (log_format or os.environ.get(LOG_FORMAT_ENV) or "text").strip().lower()
    if chosen not in ("json", "text"):
        raise ValueError(f"unknown log format {chosen!r}: use json or text ({LOG_FORMAT_ENV})")
    if chosen == "text":
        return False
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(level)
    return True
