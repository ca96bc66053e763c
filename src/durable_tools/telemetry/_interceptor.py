"""`TelemetryInterceptor`: spans, metrics and log context for durable-tools' activities and
the run/turn spans of the agent workflow."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from temporalio import activity, workflow
from temporalio.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    ExecuteWorkflowInput,
    Interceptor,
    StartActivityInput,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
    WorkflowOutboundInterceptor,
)

from durable_tools._activities._types import MODEL_ACTIVITY, ModelCall, ModelTurn, ToolInvocation
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
    error_kind,
    model_label,
    outcome_of,
)
from durable_tools.telemetry._logcontext import log_context
from durable_tools.telemetry._metrics import record_model_call, record_tool_call
from durable_tools.telemetry._tracing import HAVE_OTEL, activity_span, finish
from durable_tools.telemetry._workflow_spans import RunSpans, agent_name

__all__ = ["TelemetryInterceptor"]

if HAVE_OTEL:
    from opentelemetry import baggage


class TelemetryInterceptor(Interceptor):
    """A worker interceptor for durable-tools' own telemetry.

    - Tool and model activities get a span (`durable_tools.tool`, `durable_tools.model`)
      with agent, tool, call id, attempt, outcome, error kind and tokens, and record the
      `durable_tools_*` metrics through the SDK's meter.
    - Every activity runs with a log context (run id, call id, tool) for `JsonFormatter`.
    - The agent workflow gets a run span and one span per turn (see `RunSpans`).

    Put it after temporalio's `OpenTelemetryInterceptor` (as `TelemetryPlugin` does): that
    one attaches the propagated trace context these spans are children of.
    """

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _ActivityInbound(next)

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor] | None:
        return _WorkflowInbound


def _agent_from_baggage() -> str:
    if not HAVE_OTEL:
        return ""
    value = baggage.get_baggage(AGENT)
    return value if isinstance(value, str) else ""


class _ActivityInbound(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        first = input.args[0] if input.args else None
        if isinstance(first, ToolInvocation):
            return await self._tool(input, first)
        if isinstance(first, ModelCall):
            return await self._model(input, first)
        info = activity.info()
        token = log_context.set({"run_id": info.workflow_id, "activity": info.activity_type})
        try:
            return await super().execute_activity(input)
        finally:
            log_context.reset(token)

    async def _tool(self, input: ExecuteActivityInput, call: ToolInvocation) -> Any:
        info = activity.info()
        attempt = call.attempt_offset + info.attempt
        token = log_context.set(
            {
                "run_id": call.workflow_id,
                "call_id": call.call_id,
                "tool": call.tool_name,
                "attempt": attempt,
            }
        )
        attributes = {
            AGENT: _agent_from_baggage(),
            RUN_ID: call.workflow_id,
            TOOL: call.tool_name,
            CALL_ID: call.call_id,
            ATTEMPT: attempt,
        }
        started = time.monotonic()
        error: BaseException | None = None
        with activity_span("durable_tools.tool", attributes) as span:
            try:
                return await super().execute_activity(input)
            except BaseException as exc:
                error = exc
                raise
            finally:
                outcome = outcome_of(error)
                ended: dict[str, Any] = {OUTCOME: outcome}
                if error is not None and outcome == "error":
                    ended[ERROR_KIND] = error_kind(error)
                finish(span, ended, error)
                elapsed = timedelta(seconds=time.monotonic() - started)
                record_tool_call(call.tool_name, outcome, attempt, elapsed)
                log_context.reset(token)

    async def _model(self, input: ExecuteActivityInput, call: ModelCall) -> Any:
        info = activity.info()
        model = model_label(call.request.model)
        turn = call.request.turn + 1
        token = log_context.set(
            {"run_id": info.workflow_id, "activity": info.activity_type, "turn": turn}
        )
        attributes = {
            AGENT: _agent_from_baggage(),
            RUN_ID: info.workflow_id or "",
            TURN: turn,
            MODEL: model,
            ATTEMPT: info.attempt,
        }
        started = time.monotonic()
        error: BaseException | None = None
        result: Any = None
        with activity_span("durable_tools.model", attributes) as span:
            try:
                result = await super().execute_activity(input)
                return result
            except BaseException as exc:
                error = exc
                raise
            finally:
                outcome = outcome_of(error)
                ended: dict[str, Any] = {OUTCOME: outcome}
                usage = result.response.usage if isinstance(result, ModelTurn) else None
                if usage is not None:
                    ended[INPUT_TOKENS] = usage.input_tokens
                    ended[OUTPUT_TOKENS] = usage.output_tokens
                if error is not None and outcome == "error":
                    ended[ERROR_KIND] = error_kind(error)
                finish(span, ended, error)
                record_model_call(
                    model,
                    outcome,
                    timedelta(seconds=time.monotonic() - started),
                    usage.input_tokens if usage else 0,
                    usage.output_tokens if usage else 0,
                )
                log_context.reset(token)


class _WorkflowInbound(WorkflowInboundInterceptor):
    def init(self, outbound: WorkflowOutboundInterceptor) -> None:
        self._spans = RunSpans()
        super().init(_WorkflowOutbound(outbound, self._spans))

    async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
        with self._spans.run(agent_name(input.args)):
            return await super().execute_workflow(input)


class _WorkflowOutbound(WorkflowOutboundInterceptor):
    def __init__(self, next: WorkflowOutboundInterceptor, spans: RunSpans) -> None:
        super().__init__(next)
        self._spans = spans

    def start_activity(self, input: StartActivityInput) -> workflow.ActivityHandle[Any]:
        if input.activity == MODEL_ACTIVITY:
            first = input.args[0] if input.args else None
            turn = first.request.turn + 1 if isinstance(first, ModelCall) else 0
            self._spans.next_turn(turn)
        return super().start_activity(input)
