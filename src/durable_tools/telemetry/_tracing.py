"""OpenTelemetry, when installed (`pip install 'durable-tools[otel]'`); no-ops otherwise."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from durable_tools.telemetry._attributes import OUTCOME

__all__ = [
    "HAVE_OTEL",
    "TRACER_NAME",
    "activity_span",
    "finish",
    "replay_safe_tracing",
    "tracer",
]

try:
    from opentelemetry import trace
    from opentelemetry.trace import Span, Status, StatusCode, Tracer
    from temporalio.contrib.opentelemetry import ReplaySafeTracerProvider
except ImportError:  # the `otel` extra is not installed
    HAVE_OTEL = False
else:
    HAVE_OTEL = True

TRACER_NAME = "durable_tools"


def tracer() -> Tracer | None:
    """The durable-tools tracer from the global provider, or None without OpenTelemetry."""
    if not HAVE_OTEL:
        return None
    return trace.get_tracer(TRACER_NAME)


def replay_safe_tracing() -> bool:
    """Whether workflow code may open spans: only under a `ReplaySafeTracerProvider`
    (`temporalio.contrib.opentelemetry.create_tracer_provider`), which ends no span while
    history replays; any other provider would export each workflow span again on replay."""
    return HAVE_OTEL and isinstance(trace.get_tracer_provider(), ReplaySafeTracerProvider)


@contextmanager
def activity_span(name: str, attributes: Mapping[str, Any]) -> Iterator[Span | None]:
    """A span around an activity's work, under the context the workflow propagated.

    The span's status is set by the caller (`finish`), which knows the outcome; an
    exception is recorded but not re-described here.
    """
    found = tracer()
    if found is None:
        yield None
        return
    with found.start_as_current_span(
        name, attributes=dict(attributes), record_exception=True, set_status_on_exception=False
    ) as span:
        yield span


def finish(span: Span | None, attributes: Mapping[str, Any], error: BaseException | None) -> None:
    """Set the outcome attributes and status of an activity span."""
    if span is None:
        return
    span.set_attributes(dict(attributes))
    if error is not None and attributes.get(OUTCOME) == "error":
        span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"[:300]))
