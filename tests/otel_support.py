"""The process's one tracer provider, exporting to memory, for every test that traces.

OpenTelemetry lets a process set its global tracer provider once (a second
`set_tracer_provider` is ignored with a warning), so tests that trace share one provider:
the first asks for it, later ones add their own exporter to it.
"""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio.contrib.opentelemetry import ReplaySafeTracerProvider, create_tracer_provider


def in_memory_spans() -> InMemorySpanExporter:
    """A fresh exporter receiving every span the process's (replay-safe) provider ends."""
    provider = trace.get_tracer_provider()
    # `create_tracer_provider` returns a `ReplaySafeTracerProvider`, which is not the SDK's
    # `TracerProvider`: a second call must find it, not make one the process never uses.
    if not isinstance(provider, TracerProvider | ReplaySafeTracerProvider):
        provider = create_tracer_provider()
        trace.set_tracer_provider(provider)
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter
