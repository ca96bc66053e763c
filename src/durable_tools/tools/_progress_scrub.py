"""Secrets out of what tool progress shows people (watchers, `show`, live streams).

A tool's progress message or partial result may quote a credential (a URL with its key,
a header). The heartbeat that carries the report is read by every watcher through
`describe()` and is kept in history when an attempt times out, so all of it is scrubbed
on the worker, before it leaves: the resume value a retried attempt gets back (`details`,
which is the message when the tool gives none) too. A tool that must resume from a
secret reads the secret again from the worker instead.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from durable_tools.tools._scrub import scrub_value

__all__ = ["scrub_progress"]


def scrub_progress(details: Any, secrets: Iterable[str]) -> Any:
    """Heartbeat details with secrets scrubbed from a progress report, resume value included.

    Args:
        details: What the tool heartbeats with: a `ProgressBeat` (a dict of
            `PROGRESS_KIND`) or a free-form value; every string in it is scrubbed.
        secrets: The worker's secret values.
    """
    return scrub_value(details, secrets)
