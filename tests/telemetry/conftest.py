"""One exporter for the tracing tests of this package (see tests/otel_support.py).

OpenTelemetry lets a process set its global tracer provider once, so every tracing test
shares the provider and picks its own spans out by run id.
"""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_support import in_memory_spans


@pytest.fixture(scope="session")
def spans() -> InMemorySpanExporter:
    return in_memory_spans()
