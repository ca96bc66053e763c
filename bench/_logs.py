"""The SDK core's log lines in a bench process: on stderr through Python logging, with
the ones a benchmark causes on purpose counted instead of shown.

The core writes its warnings straight to the terminal by default. A benchmark that stops
its server on purpose (the recovery figure) then got a screen of gRPC "tcp connect error"
retry warnings, one for every poll and completion in flight, that say only what the
benchmark did; the bare loop's 1 MB tool output likewise trips the payload-size warning
(`TMPRL1103`) by design. Inside an `expected_core_logs` block the lines that name what
the block causes are counted and summed up in one line; every other line still shows.
"""

from __future__ import annotations

import collections
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from temporalio.runtime import (
    LogForwardingConfig,
    LoggingConfig,
    Runtime,
    TelemetryConfig,
    TelemetryFilter,
)

__all__ = ["CORE_LOGGER", "core_logs_to_stderr", "expected_core_logs"]

CORE_LOGGER = logging.getLogger("temporalio.core")


class _Expected(logging.Filter):
    """Drops (and counts) the core lines that contain one of `needles`."""

    def __init__(self) -> None:
        super().__init__()
        self.needles: tuple[str, ...] = ()
        self.counts: collections.Counter[str] = collections.Counter()

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        for needle in self.needles:
            if needle in message:
                self.counts[needle] += 1
                return False
        return True


_EXPECTED = _Expected()


def core_logs_to_stderr() -> None:
    """Forward the core's log lines (WARN and up) to stderr through `CORE_LOGGER`.

    Call it before the process's first client connects: the runtime is set once.
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(_EXPECTED)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    CORE_LOGGER.addHandler(handler)
    CORE_LOGGER.setLevel(logging.WARNING)
    CORE_LOGGER.propagate = False
    logs = LoggingConfig(
        filter=TelemetryFilter(core_level="WARN", other_level="ERROR"),
        forwarding=LogForwardingConfig(logger=CORE_LOGGER),
    )
    Runtime.set_default(Runtime(telemetry=TelemetryConfig(logging=logs)))


@contextmanager
def expected_core_logs(*needles: str, why: str) -> Iterator[None]:
    """Count, instead of showing, the core lines containing any of `needles` in this block;
    then print how many there were and `why` (one line, only if there were any)."""
    saved, before = _EXPECTED.needles, sum(_EXPECTED.counts[n] for n in needles)
    _EXPECTED.needles = saved + needles
    try:
        yield
    finally:
        _EXPECTED.needles = saved
        seen = sum(_EXPECTED.counts[n] for n in needles) - before
        if seen:
            said = " / ".join(repr(n) for n in needles)
            print(f"bench: {seen} core warnings ({said}) {why}, as expected", file=sys.stderr)
