"""durable-tools' own worker-side metrics, recorded through the SDK's activity meter.

`activity.metric_meter()` feeds the worker's `temporalio.runtime.Runtime`, so these metrics
leave through the same Prometheus endpoint (or OpenTelemetry exporter) as the SDK's own, with
the SDK's labels (namespace, task_queue, activity_type) added. Durations are milliseconds.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity

__all__ = [
    "MODEL_CALLS",
    "MODEL_CALL_DURATION",
    "MODEL_TOKENS",
    "TOOL_CALLS",
    "TOOL_CALL_DURATION",
    "TOOL_RETRIES",
    "record_model_call",
    "record_tool_call",
]

TOOL_CALLS = "durable_tools_tool_calls"
TOOL_CALL_DURATION = "durable_tools_tool_call_duration"
TOOL_RETRIES = "durable_tools_tool_retries"
MODEL_CALLS = "durable_tools_model_calls"
MODEL_CALL_DURATION = "durable_tools_model_call_duration"
MODEL_TOKENS = "durable_tools_model_tokens"


def record_tool_call(tool: str, outcome: str, attempt: int, elapsed: timedelta) -> None:
    """One execution of a tool activity: its outcome, latency, and whether it was a retry."""
    meter = activity.metric_meter()
    labels = {"tool": tool, "outcome": outcome}
    meter.create_counter(TOOL_CALLS, "tool activity executions by outcome").add(1, labels)
    meter.create_histogram_timedelta(
        TOOL_CALL_DURATION, "tool activity latency", unit="duration"
    ).record(elapsed, labels)
    if attempt > 1:  # counts workflow-driven retries too (`ToolInvocation.attempt_offset`)
        meter.create_counter(TOOL_RETRIES, "tool executions that were retries").add(
            1, {"tool": tool}
        )


def record_model_call(
    model: str, outcome: str, elapsed: timedelta, input_tokens: int, output_tokens: int
) -> None:
    """One execution of the model activity: outcome, latency and tokens by model."""
    meter = activity.metric_meter()
    labels = {"model": model, "outcome": outcome}
    meter.create_counter(MODEL_CALLS, "model activity executions by outcome").add(1, labels)
    meter.create_histogram_timedelta(
        MODEL_CALL_DURATION, "model activity latency", unit="duration"
    ).record(elapsed, labels)
    tokens = meter.create_counter(MODEL_TOKENS, "tokens the model reported, by direction")
    if input_tokens:
        tokens.add(input_tokens, {"model": model, "direction": "input"})
    if output_tokens:
        tokens.add(output_tokens, {"model": model, "direction": "output"})
