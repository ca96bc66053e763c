"""The auto-mode evaluator activity: a Python callable on the worker, or a model.

The workflow races this activity against a person and treats anything but a confident
`approve` or `deny` (an error, a timeout, a malformed answer) as "ask the person": the
activity itself raises on every failure instead of guessing a verdict.
"""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from pydantic import ValidationError
from temporalio import activity
from temporalio.exceptions import ApplicationError

from durable_tools.messages import Message, ModelRequest
from durable_tools.models import resolve_model
from durable_tools.protocol._policy_types import (
    EVALUATE_ACTIVITY,
    Evaluation,
    EvaluationRequest,
)

__all__ = ["Evaluator", "evaluate_activity", "evaluation_prompt"]

Evaluator = Callable[[EvaluationRequest], Evaluation | dict[str, Any] | Awaitable[Any]]
"""A worker-side evaluator: takes the request, returns an `Evaluation` (or its dict)."""

_MODEL_PREFIX = "model:"


def evaluation_prompt(request: EvaluationRequest) -> list[Message]:
    """The messages a model evaluator is sent: the criteria, then the call."""
    criteria = request.criteria
    system = (
        "You review one tool call an AI agent wants to make, against criteria set by its "
        "operators. Answer with one JSON object and nothing else: "
        '{"verdict": "approve" | "escalate" | "deny", "confidence": 0..1, "reasoning": "..."}.\n'
        f"Approve when: {json.dumps(list(criteria.approve_when))}\n"
        f"Escalate to a person when: {json.dumps(list(criteria.escalate_when))}\n"
        f"Deny when: {json.dumps(list(criteria.deny_when))}\n"
        "When unsure, escalate."
    )
    call = json.dumps({"tool": request.tool, "arguments": request.arguments}, sort_keys=True)
    return [Message.system(system), Message.user(call)]


def _refuse(message: str) -> ApplicationError:
    return ApplicationError(message, type="EvaluatorError", non_retryable=True)


def _parse_model_answer(text: str) -> Evaluation:
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        raise _refuse("the evaluator model did not answer with a JSON object")
    try:
        return Evaluation.model_validate_json(text[start : end + 1])
    except ValidationError as error:
        raise _refuse(f"the evaluator model's answer is not a verdict: {error}") from None


async def _by_model(spec: str, request: EvaluationRequest) -> Evaluation:
    try:
        adapter = resolve_model(spec)
    except ValueError as error:
        raise _refuse(str(error)) from None
    response = await adapter.complete(
        ModelRequest(model=spec, messages=evaluation_prompt(request), run_id=request.run_id)
    )
    return _parse_model_answer(response.message.content or "")


async def _by_callable(function: Evaluator, request: EvaluationRequest) -> Evaluation:
    answer = function(request)
    if inspect.isawaitable(answer):
        answer = await answer
    try:
        return Evaluation.model_validate(answer)
    except ValidationError as error:
        raise _refuse(f"evaluator {request.evaluator!r} returned no verdict: {error}") from None


def evaluate_activity(evaluators: Mapping[str, Evaluator]) -> Callable[..., Any]:
    """The evaluator activity, with the worker's named Python evaluators."""
    named = dict(evaluators)

    @activity.defn(name=EVALUATE_ACTIVITY)
    async def evaluate(request: EvaluationRequest) -> Evaluation:
        started = time.monotonic()
        if request.evaluator.startswith(_MODEL_PREFIX):
            verdict = await _by_model(request.evaluator.removeprefix(_MODEL_PREFIX), request)
        else:
            function = named.get(request.evaluator)
            if function is None:
                known = ", ".join(sorted(named)) or "none"
                raise _refuse(
                    f"no evaluator {request.evaluator!r} on this worker (registered: {known})"
                )
            verdict = await _by_callable(function, request)
        latency = (time.monotonic() - started) * 1000
        return verdict.model_copy(update={"latency_ms": round(latency, 3)})

    return evaluate
