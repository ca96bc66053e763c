"""Secrets out of what tool progress shows people (watchers, `show`, live streams).

A tool's progress message or partial result may quote a credential (a URL with its key,
a header). The heartbeat that carries the report is read by every watcher through
`describe()` and is kept in history when an attempt fails, so the part people see is
scrubbed on the worker, before it leaves. The resume value a retried attempt gets back
(`details`) is the tool's own and passes as it is.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from durable_tools.tools._progress import PROGRESS_KIND
from durable_tools.tools._scrub import scrub_value

__all__ = ["scrub_progress"]


def scrub_progress(details: Any, secrets: Iterable[str]) -> Any:
    """Heartbeat details with secrets scrubbed from a progress report's shown parts.

    Args:
        details: What the tool heartbeats with; only a `ProgressBeat` (a dict of
            `PROGRESS_KIND`) is changed.
        secrets: The worker's secret values.
    """
    if not isinstance(details, dict) or details.get("kind") != PROGRESS_KIND:
        return details
    shown = {key: value for key, value in details.items() if key != "details"}
    return {**scrub_value(shown, secrets), "details": details.get("details")}
