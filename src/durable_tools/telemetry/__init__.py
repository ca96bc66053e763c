"""Traces, metrics and structured logs for durable-tools workers.

- `TelemetryPlugin`: pass it to `Client.connect(plugins=[...])` (or
  `durable_tools.connect`) and every worker built from that client traces runs
  (run -> turn -> model / tool spans, through temporalio's OpenTelemetry support) and
  records durable-tools' metrics.
- `prometheus_runtime(port)`: a `temporalio.runtime.Runtime` serving the SDK's and
  durable-tools' metrics at `/metrics`; connect the worker's client with it.
- `configure_logging("json")` / `JsonFormatter`: one JSON object per log line, with the
  run id, call id and tool of the activity that logged it.

See docs/observability.md.
"""

from durable_tools.telemetry._attributes import (
    AGENT,
    ATTEMPT,
    CALL_ID,
    ERROR_KIND,
    INPUT_TOKENS,
    MODEL,
    OUTCOME,
    OUTPUT_TOKENS,
    RUN_ID,
    TOOL,
    TURN,
)
from durable_tools.telemetry._interceptor import TelemetryInterceptor
from durable_tools.telemetry._logcontext import current_log_context
from durable_tools.telemetry._logging import LOG_FORMAT_ENV, JsonFormatter, configure_logging
from durable_tools.telemetry._metrics import (
    MODEL_CALL_DURATION,
    MODEL_CALLS,
    MODEL_TOKENS,
    TOOL_CALL_DURATION,
    TOOL_CALLS,
    TOOL_RETRIES,
)
from durable_tools.telemetry._plugin import TelemetryPlugin
from durable_tools.telemetry._runtime import prometheus_runtime
from durable_tools.workflows.observe._metrics import (
    APPROVAL_WAIT,
    APPROVALS_DECIDED,
    APPROVALS_REQUESTED,
)

__all__ = [
    "AGENT",
    "APPROVALS_DECIDED",
    "APPROVALS_REQUESTED",
    "APPROVAL_WAIT",
    "ATTEMPT",
    "CALL_ID",
    "ERROR_KIND",
    "INPUT_TOKENS",
    "LOG_FORMAT_ENV",
    "MODEL",
    "MODEL_CALLS",
    "MODEL_CALL_DURATION",
    "MODEL_TOKENS",
    "OUTCOME",
    "OUTPUT_TOKENS",
    "RUN_ID",
    "TOOL",
    "TOOL_CALLS",
    "TOOL_CALL_DURATION",
    "TOOL_RETRIES",
    "TURN",
    "JsonFormatter",
    "TelemetryInterceptor",
    "TelemetryPlugin",
    "configure_logging",
    "current_log_context",
    "prometheus_runtime",
]
