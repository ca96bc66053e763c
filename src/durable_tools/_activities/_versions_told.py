"""Which registry version a worker last told each run, so it tells each run once.

A run follows its worker's catalog (`workflows/catalog/_run_catalog.follow_worker`): the
model activity's answer carries the worker's registry version when the run may not know
it. Sending the run's known version with every model call cost about 40 bytes of history
a turn; instead the worker remembers what it told each run and says it again only when its
registry changed since, or when it never told that run (another worker served its earlier
turns, the run continued as new, or the entry was evicted). A run that hears a version it
has does nothing; another one makes it read its catalog again.
"""

from __future__ import annotations

from collections import OrderedDict

__all__ = ["VersionsTold"]

_MAX_RUNS = 10_000
"""Runs remembered per worker; an evicted run is told again (some bytes, no harm)."""


class VersionsTold:
    """The registry version last told to each run (by workflow and run id), bounded."""

    def __init__(self, max_runs: int = _MAX_RUNS) -> None:
        self._told: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._max_runs = max_runs

    def to_tell(self, run: tuple[str, str], version: str) -> str | None:
        """`version` if the run was not told it last, else None; remembers it as told."""
        if self._told.get(run) == version:
            self._told.move_to_end(run)
            return None
        self._told[run] = version
        self._told.move_to_end(run)
        while len(self._told) > self._max_runs:
            self._told.popitem(last=False)
        return version
