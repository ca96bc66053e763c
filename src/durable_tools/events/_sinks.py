"""Where a run's audit stream goes: JSON lines, Python logging, OpenTelemetry.

A sink receives each event once, in order, with the run it belongs to. Sinks run in the
process that follows the run (`follow_events`, `durable-tools events RUN --follow`), never
in the workflow, which may do no I/O.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Protocol, runtime_checkable

from durable_tools.workflows import RunEvent

__all__ = [
    "EventSink",
    "JsonLinesSink",
    "LoggingSink",
    "MultiSink",
    "OpenTelemetrySink",
    "sink_from_spec",
]


@runtime_checkable
class EventSink(Protocol):
    """Receives a run's events, one at a time, in order."""

    def emit(self, run_id: str, event: RunEvent) -> None:
        """Take one event of run `run_id`."""
        ...

    def close(self) -> None:
        """Flush and release what the sink holds."""
        ...


def event_record(run_id: str, event: RunEvent) -> dict[str, Any]:
    """An event as one flat JSON object with its run id (empty fields left out)."""
    return {"run_id": run_id, **event.model_dump(mode="json", exclude_none=True)}


class JsonLinesSink:
    """Appends one JSON object per event to a file, flushed after each line.

    Args:
        path: The file; its directory must exist. Opened for appending, so a follower
            restarted from a cursor continues the same file.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._file: IO[str] = self.path.open("a", encoding="utf-8")
        self._lock = threading.Lock()

    def emit(self, run_id: str, event: RunEvent) -> None:
        """Write the event as one line."""
        line = json.dumps(event_record(run_id, event), ensure_ascii=False)
        with self._lock:
            self._file.write(line + "\n")
            self._file.flush()

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            self._file.close()


class LoggingSink:
    """Logs each event through Python logging, the event's fields in `extra["event"]`.

    Args:
        logger: The logger's name (default `durable_tools.events`).
        level: The level of every record.
    """

    def __init__(self, logger: str = "durable_tools.events", level: int = logging.INFO) -> None:
        self.logger = logging.getLogger(logger)
        self.level = level

    def emit(self, run_id: str, event: RunEvent) -> None:
        """Log one line: run, event, call and detail."""
        self.logger.log(
            self.level,
            "%s %s %s%s",
            run_id,
            event.event,
            f"{event.tool} {event.call_id} " if event.call_id else "",
            event.detail or "",
            extra={"event": event_record(run_id, event)},
        )

    def close(self) -> None:
        """Nothing to release."""


class OpenTelemetrySink:
    """Each event as an OpenTelemetry span named `durable_tools.<event>`.

    A call's closing event spans the call's duration (`duration_ms`); other events are
    instants. Attributes: run id, call id, tool, transport, attempt, error kind, and the
    artifacts' URIs. Needs `opentelemetry-api` (and an SDK configured by the application
    for the spans to go anywhere).

    Raises:
        ImportError: OpenTelemetry is not installed.
    """

    def __init__(self, tracer_name: str = "durable_tools") -> None:
        # Optional dependency: imported only when this sink is asked for.
        from opentelemetry import trace

        self._tracer = trace.get_tracer(tracer_name)

    def emit(self, run_id: str, event: RunEvent) -> None:
        """Record one span."""
        end = _nanos(event.at)
        start = end - int((event.duration_ms or 0) * 1_000_000)
        attributes: dict[str, Any] = {"durable_tools.run_id": run_id}
        for key in ("call_id", "tool", "transport", "attempt", "error_kind", "detail", "seq"):
            value = getattr(event, key)
            if value is not None:
                attributes[f"durable_tools.{key}"] = value
        if event.artifacts:
            attributes["durable_tools.artifacts"] = [a.uri for a in event.artifacts]
        span = self._tracer.start_span(
            f"durable_tools.{event.event}", start_time=start, attributes=attributes
        )
        span.end(end_time=end)

    def close(self) -> None:
        """Nothing to release (the application's SDK exports the spans)."""


class MultiSink:
    """Hands each event to several sinks, in order."""

    def __init__(self, sinks: Sequence[EventSink]) -> None:
        self.sinks = list(sinks)

    def emit(self, run_id: str, event: RunEvent) -> None:
        """Give the event to every sink."""
        for sink in self.sinks:
            sink.emit(run_id, event)

    def close(self) -> None:
        """Close every sink."""
        for sink in self.sinks:
            sink.close()


def sink_from_spec(spec: str) -> EventSink:
    """A sink from its command-line form: `jsonl:PATH`, `log`, `log:LOGGER` or `otel`.

    Raises:
        ValueError: an unknown form, or `jsonl` without a path.
        ImportError: `otel` without OpenTelemetry installed.
    """
    kind, _, argument = spec.partition(":")
    if kind == "jsonl":
        if not argument:
            raise ValueError("the jsonl sink needs a path: jsonl:PATH")
        return JsonLinesSink(argument)
    if kind == "log":
        return LoggingSink(argument or "durable_tools.events")
    if kind == "otel":
        return OpenTelemetrySink()
    raise ValueError(f"unknown event sink {spec!r}: use jsonl:PATH, log[:LOGGER] or otel")


def _nanos(at: datetime) -> int:
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return int(at.timestamp() * 1_000_000_000)
