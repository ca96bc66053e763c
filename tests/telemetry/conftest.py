"""One replay-safe tracer provider for the session, exporting to memory.

OpenTelemetry lets a process set its global tracer provider once, so every tracing test
shares this exporter and picks its own spans out by run id.
"""

from __future__ import annotations

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio.contrib.opentelemetry import create_tracer_provider

_EXPORTER = InMemorySpanExporter()


@pytest.fixture(scope="session")
def spans() -> InMemorySpanExporter:
    provider = create_tracer_provider()
    provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
    trace.set_tracer_provider(provider)
    return _EXPORTER
