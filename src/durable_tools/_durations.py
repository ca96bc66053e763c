"""The one bound on every duration a caller, a policy or a model can hand a run.

A workflow turns durations into deadlines (`now + timedelta(seconds=...)`) and timers. An
unbounded float (`1e12` seconds is some 31,700 years) overflows `datetime` inside the
workflow task, which then fails on every retry: the run is wedged. Validation refuses such
values before they enter history instead.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

__all__ = ["MAX_DURATION_SECONDS", "Seconds"]

MAX_DURATION_SECONDS = 10 * 365 * 24 * 3600
"""Ten years: the longest timeout, deadline, grant or wait any run accepts."""

Seconds = Annotated[float, Field(gt=0, le=MAX_DURATION_SECONDS, allow_inf_nan=False)]
"""A positive, finite duration in seconds of at most `MAX_DURATION_SECONDS`."""
