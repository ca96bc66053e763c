"""`TelemetryPlugin`: temporalio's OpenTelemetry tracing plus durable-tools' own telemetry."""

from __future__ import annotations

import dataclasses

from temporalio.client import Interceptor as ClientInterceptor
from temporalio.plugin import SimplePlugin
from temporalio.worker import Interceptor as WorkerInterceptor, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from durable_tools._extras import install_hint
from durable_tools.telemetry._interceptor import TelemetryInterceptor
from durable_tools.telemetry._tracing import HAVE_OTEL

__all__ = ["TelemetryPlugin"]


def _pass_opentelemetry(runner: WorkflowRunner | None) -> WorkflowRunner:
    if runner is None:
        raise ValueError("TelemetryPlugin needs a workflow runner to configure")
    if isinstance(runner, SandboxedWorkflowRunner):
        # One OpenTelemetry (and one global tracer provider) for workflow code and worker.
        restrictions = runner.restrictions.with_passthrough_modules("opentelemetry")
        return dataclasses.replace(runner, restrictions=restrictions)
    return runner


class TelemetryPlugin(SimplePlugin):
    """Traces, metrics and log context for a client and the workers built from it.

    With `tracing` (needs the `otel` extra), temporalio's `OpenTelemetryInterceptor`
    propagates the trace context from the client through workflows to activities, and
    `TelemetryInterceptor` adds the run, turn, model and tool spans. The global tracer
    provider must come from `temporalio.contrib.opentelemetry.create_tracer_provider()`
    (replay-safe; temporalio refuses any other). Without tracing, the plugin still records
    durable-tools' metrics and sets the log context.

    Args:
        tracing: Create and propagate spans.
        add_temporal_spans: Also temporalio's own spans (StartWorkflow, RunActivity, ...).
    """

    def __init__(self, *, tracing: bool = True, add_temporal_spans: bool = False) -> None:
        interceptors: list[ClientInterceptor | WorkerInterceptor] = []
        if tracing:
            if not HAVE_OTEL:
                raise ValueError(
                    f"tracing needs OpenTelemetry: {install_hint('otel')} (or pass tracing=False)"
                )
            from temporalio.contrib.opentelemetry import OpenTelemetryInterceptor

            # First: its inbound side attaches the propagated context ours builds on.
            interceptors.append(OpenTelemetryInterceptor(add_temporal_spans))
        interceptors.append(TelemetryInterceptor())
        super().__init__(
            "durable_tools.TelemetryPlugin",
            interceptors=interceptors,
            workflow_runner=_pass_opentelemetry if tracing else None,
        )
