"""A run's audit stream outside the run: following it with a cursor, and sinks for it."""

from ._follow import MISSED_EVENT, FollowableRun, FollowResult, follow_events
from ._sinks import (
    EventSink,
    JsonLinesSink,
    LoggingSink,
    MultiSink,
    OpenTelemetrySink,
    sink_from_spec,
)

__all__ = [
    "MISSED_EVENT",
    "EventSink",
    "FollowResult",
    "FollowableRun",
    "JsonLinesSink",
    "LoggingSink",
    "MultiSink",
    "OpenTelemetrySink",
    "follow_events",
    "sink_from_spec",
]
