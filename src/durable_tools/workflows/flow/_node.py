"""One node of a flow: build its arguments, run its tool activity under its own policy.

The node is scheduled as the tool's own activity type (so the UI's history of a flow
reads like its steps), with the tool's options (`activity_options_for`), the same
workflow-driven retries as a call of the agent (a tool not safe to repeat after a
timeout is retried only on clean, retryable errors), an idempotency key derived from
the flow call's key, and the same kind of activity summary.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError, TimeoutError

from durable_tools._activities._types import ToolInvocation
from durable_tools.protocol._limits import PAYLOAD_BUDGET_BYTES, payload_bytes
from durable_tools.protocol._options import ToolActivityOptions, activity_options_for
from durable_tools.tools._errors import ErrorKind, InvalidArguments
from durable_tools.tools._flow_model import FlowInput, PlannedNode
from durable_tools.tools._formatting import abridge_arguments, redact_arguments
from durable_tools.tools._results import ToolOutcome
from durable_tools.tools._validation import validate_arguments
from durable_tools.workflows.calls._tool_activity import (
    attempts_after,
    attempts_deadline,
    retry_when_due,
    schedule_tool_activity,
    workflow_retry_delay,
)
from durable_tools.workflows.flow._resolve import Unresolvable, node_value, resolve

__all__ = ["NodeDone", "NodeFailed", "run_node"]

_ARGUMENT_BUDGET = PAYLOAD_BUDGET_BYTES - 64_000
"""Largest arguments a node may be scheduled with (room for the rest of the input)."""


@dataclass(frozen=True)
class NodeDone:
    """A node that completed: its outcome, and the value it passes on (None if it passes none)."""

    outcome: ToolOutcome
    value: Any


class NodeFailed(Exception):
    """A node that did not complete; the message says why, for the model and operators."""

    def __init__(self, message: str, kind: str, attempts: int) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.attempts = attempts


def node_call_id(input: FlowInput, node: PlannedNode) -> str:
    """The node's call id as its tool sees it: the flow call's id and the node id."""
    return f"{input.call_id}.{node.id}"


async def run_node(input: FlowInput, node: PlannedNode, values: Mapping[str, Any]) -> NodeDone:
    """Run one node whose inputs are ready.

    Raises:
        NodeFailed: its arguments could not be built or are invalid, or its tool failed
            after its retries, timed out, was cancelled, or reported an error.
    """
    spec = node.spec
    try:
        arguments = resolve(node.arguments, input.arguments, values)
        if not isinstance(arguments, dict):
            raise Unresolvable("the node's arguments are not an object")
        if spec.validates_input:
            arguments = validate_arguments(spec, arguments)
    except (Unresolvable, ValueError) as exc:
        raise NodeFailed(
            f"its arguments could not be built: {exc}", "InvalidArguments", 0
        ) from None
    except InvalidArguments as exc:
        detail = "; ".join(exc.errors[:3]) or exc.message
        raise NodeFailed(
            f"the arguments built for it are invalid: {detail}", exc.kind.value, 0
        ) from None
    size = payload_bytes(arguments)
    if size > _ARGUMENT_BUDGET:
        raise NodeFailed(
            f"its arguments are {size:,} bytes, over the {_ARGUMENT_BUDGET:,}-byte limit of one "
            "activity input",
            ErrorKind.INVALID_ARGUMENTS.value,
            0,
        )
    limit = input.plan.node_output_limit_bytes if node.passes_output else input.output_limit_bytes
    call_id = node_call_id(input, node)
    summary = None
    if input.activity_summaries:
        shown = ""
        if input.summary_arguments:
            shown = " " + abridge_arguments(redact_arguments(arguments, spec.safety.redact))
        summary = f"{spec.name} {call_id}{shown}"[:200]
    options = activity_options_for(spec, workflow.info().task_queue)
    outcome = await _attempts(input, node, arguments, call_id, limit, options, summary)
    if outcome.is_error or outcome.skipped is not None:
        raise NodeFailed(
            outcome.content[:1_000], outcome.error_kind or "ToolError", outcome.attempt
        )
    if not node.passes_output:
        return NodeDone(outcome, None)
    try:
        return NodeDone(outcome, node_value(outcome, limit))
    except Unresolvable as exc:
        raise NodeFailed(str(exc), "ToolOutputTooLarge", outcome.attempt) from None


async def _attempts(
    input: FlowInput,
    node: PlannedNode,
    arguments: dict[str, Any],
    call_id: str,
    limit: int,
    options: ToolActivityOptions,
    summary: str | None,
) -> ToolOutcome:
    spec = node.spec
    attempts = 0
    deadline = attempts_deadline(options)  # schedule_to_close bounds all the attempts
    while True:
        invocation = ToolInvocation(
            call_id=call_id,
            tool_name=spec.name,
            arguments=arguments,
            workflow_id=workflow.info().workflow_id,
            identity=input.identity,
            idempotency_key=f"{input.idempotency_key}/{node.id}",
            attempt_offset=attempts,
            output_limit_bytes=limit,
        )
        try:
            return await schedule_tool_activity(
                spec.name, invocation, options, summary, deadline=deadline
            )
        except ActivityError as err:
            cause = err.cause
            attempts = attempts_after(cause, attempts)
            delay = workflow_retry_delay(spec, options, cause, attempts, deadline=deadline)
            if delay is not None and await retry_when_due(delay, deadline):
                continue
            raise _failure(cause, attempts, spec.safety.safe_to_repeat) from None


def _failure(cause: BaseException | None, attempts: int, safe_to_repeat: bool) -> NodeFailed:
    tries = f" after {attempts} attempt{'s' if attempts != 1 else ''}"
    if isinstance(cause, ApplicationError):
        details: Any = cause.details
        text = details[0] if details and isinstance(details[0], str) else cause.message
        return NodeFailed(f"{text}{tries}"[:1_000], cause.type or "ToolExecutionError", attempts)
    if isinstance(cause, TimeoutError):
        which = cause.type.name.lower().replace("_", "-") if cause.type else "activity"
        effect = "" if safe_to_repeat else "; it may or may not have taken effect"
        return NodeFailed(f"{which} timeout{effect}{tries}", ErrorKind.TIMEOUT.value, attempts)
    if isinstance(cause, CancelledError):
        return NodeFailed("it was cancelled", ErrorKind.CANCELLED.value, attempts)
    return NodeFailed(f"{cause}{tries}"[:1_000], ErrorKind.EXECUTION.value, attempts)
