"""Run one agent with `DurableToolsPlugin` beside temporalio's `OpenTelemetryPlugin` in a
fresh interpreter, and print the names of the spans it ended (JSON).

OpenTelemetry's tracer provider is process-global and set once, and other tracing tests in
the same process install their own interceptors on it; a process of its own keeps this
check independent of test order. Used by tests/test_plugin.py.

    python plugin_otel_check.py ADDRESS NAMESPACE TASK_QUEUE WORKDIR OTEL_FIRST
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from opentelemetry import trace
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from temporalio.client import Client, Plugin
from temporalio.contrib.opentelemetry import (
    OpenTelemetryPlugin,
    create_tracer_provider,
)
from temporalio.worker import Worker

from durable_tools import DurableTools, DurableToolsPlugin, ToolRegistry
from support import answer, calls, write_script


async def main(address: str, namespace: str, task_queue: str, work: Path, otel_first: bool) -> None:
    exporter = InMemorySpanExporter()
    provider = create_tracer_provider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    ran: list[str] = []
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    def lookup(key: str) -> str:
        """Look a key up."""
        ran.append(key)
        return f"value of {key}"

    plugins: list[Plugin] = [DurableToolsPlugin(registry)]
    plugins.insert(0 if otel_first else 1, OpenTelemetryPlugin(add_temporal_spans=True))
    client = await Client.connect(address, namespace=namespace, plugins=plugins)
    worker = Worker(client, task_queue=task_queue)
    passthrough = worker.config(active_config=True)[
        "workflow_runner"
    ].restrictions.passthrough_modules  # type: ignore[attr-defined]
    model = write_script(work, [calls(("c1", "lookup", {"key": "k1"})), answer("found it")])
    async with worker:
        run = await DurableTools(client, task_queue).start("find k1", model=model)
        result = await asyncio.wait_for(run.result(), 60)
    print(
        json.dumps(
            {
                "status": result.status.value,
                "ran": ran,
                "passthrough": sorted(passthrough),
                "spans": sorted({span.name for span in exporter.get_finished_spans()}),
            }
        )
    )


if __name__ == "__main__":
    address, namespace, queue, work, first = sys.argv[1:6]
    asyncio.run(main(address, namespace, queue, Path(work), first == "1"))
