"""The agent run's side of a flow call: start the flow as a child workflow, and turn how
it ended into the one tool outcome the model sees.

The child's id is derived from the run and the call's idempotency key, like a
sub-agent's, so a retried or replayed parent never starts the same flow twice.
"""

from __future__ import annotations

from datetime import timedelta

from pydantic import ValidationError
from temporalio import workflow
from temporalio.exceptions import ApplicationError, CancelledError, ChildWorkflowError, TimeoutError

from durable_tools.protocol._limits import PAYLOAD_BUDGET_BYTES, payload_bytes
from durable_tools.tools._errors import Cancelled, ErrorKind, ToolExecutionError, ToolTimeout
from durable_tools.tools._flow_model import (
    CANCEL_GRACE_SECONDS,
    FLOW_WORKFLOW,
    FlowInput,
    FlowPlan,
    FlowResult,
)
from durable_tools.tools._formatting import error_outcome
from durable_tools.tools._results import ToolOutcome
from durable_tools.workflows.run._state import RunState
from durable_tools.workflows.run._valid_call import ValidCall

__all__ = ["BACKSTOP_SECONDS", "run_flow"]

BACKSTOP_SECONDS = 30.0
"""Added to a flow's timeout (and the grace its nodes get to stop) for the child
workflow's execution timeout: the flow ends itself first; this only catches a flow that
cannot (no worker runs it)."""


async def run_flow(state: RunState, valid: ValidCall) -> ToolOutcome:
    """Run a flow tool's call as a `FlowWorkflow` child; its outcome, success or error."""
    call, spec = valid.call, valid.spec
    workflow_id = workflow.info().workflow_id
    child_id = f"{workflow_id}.{state.calls.keys[call.id][len(workflow_id) + 1 :]}"
    state.event("tool.started", call, detail=f"flow run {child_id}", transport="flow", attempt=1)
    try:
        plan = FlowPlan.model_validate(spec.flow)
        flow_input = FlowInput(
            plan=plan,
            arguments=valid.arguments,
            call_id=call.id,
            idempotency_key=state.calls.keys[call.id],
            identity=state.input.identity,
            output_limit_bytes=state.config.output_limit_bytes,
            activity_summaries=state.config.activity_summaries,
            summary_arguments=state.config.summary_arguments,
        )
    except ValidationError as exc:  # a plan from a worker with another flow format, say
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        failure = ToolExecutionError(f"the flow could not be started: {where}: {first['msg']}")
        return error_outcome(call.id, spec.name, failure)
    size = payload_bytes(flow_input)
    if size > PAYLOAD_BUDGET_BYTES:
        failure = ToolExecutionError(
            f"the flow's input is {size:,} bytes, over the {PAYLOAD_BUDGET_BYTES:,}-byte limit"
        )
        return error_outcome(call.id, spec.name, failure)
    bound = plan.timeout_seconds + CANCEL_GRACE_SECONDS + BACKSTOP_SECONDS
    try:
        result: FlowResult = await workflow.execute_child_workflow(
            FLOW_WORKFLOW,
            flow_input,
            id=child_id,
            result_type=FlowResult,
            execution_timeout=timedelta(seconds=bound),
            static_summary=f"flow {spec.name} of {workflow_id}"[:200],
            # If the agent run closes first, its flows are asked to stop, not killed.
            parent_close_policy=workflow.ParentClosePolicy.REQUEST_CANCEL,
        )
    except ChildWorkflowError as err:
        return _failed(call.id, spec.name, err, child_id)
    return result.outcome.model_copy(update={"call_id": call.id, "tool_name": spec.name})


def _failed(call_id: str, name: str, err: ChildWorkflowError, child_id: str) -> ToolOutcome:
    cause = err.cause
    if isinstance(cause, ApplicationError):
        details = cause.details
        text = (
            details[0]
            if details and isinstance(details[0], str)
            else f"Tool call {call_id} to {name!r} failed: {cause.message}"
        )
        kind = cause.type or ErrorKind.EXECUTION.value
        return ToolOutcome(
            call_id=call_id, tool_name=name, content=text, is_error=True, error_kind=kind
        )
    if isinstance(cause, TimeoutError):
        return error_outcome(call_id, name, ToolTimeout(f"flow run {child_id} did not end in time"))
    if isinstance(cause, CancelledError):
        return error_outcome(call_id, name, Cancelled(f"flow run {child_id} was cancelled"))
    return error_outcome(
        call_id, name, ToolExecutionError(f"flow run {child_id} failed: {cause or err}")
    )
