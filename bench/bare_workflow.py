"""The baseline: an agent loop written by hand on Temporal, with no framework.

Each turn runs one model activity (the same scripted adapter durable-tools uses, handed the
whole conversation) and one activity per tool call, and nothing else: no catalog, no
validation, no timeline, no search attributes, no artifact store. This is what the engine
itself costs for the same work.

Its messages travel as a hand-written loop would send them: plain pydantic models (here
the same messages as plain dicts), every field written. durable-tools' own wire types
leave default fields out of their JSON (`durable_tools._wire`); the baseline must not get
that for free, or it would stop being a loop written without the framework.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from pydantic import BaseModel
from temporalio import activity, workflow

with workflow.unsafe.imports_passed_through():
    from durable_tools import Message
    from durable_tools.messages import ModelRequest, ModelResponse
    from durable_tools.models import resolve_model

__all__ = ["BareAgentInput", "BareAgentWorkflow", "BareToolCall", "bare_activities"]

BARE_MODEL_ACTIVITY = "bench.bare_model"


class BareAgentInput(BaseModel):
    model: str
    prompt: str
    max_turns: int = 100


class BareModelRequest(BaseModel):
    model: str
    messages: list[dict[str, Any]]
    turn: int


class BareModelResponse(BaseModel):
    message: dict[str, Any]


def _plain(message: Message) -> dict[str, Any]:
    """A message as plain data: every field, as a model without wire trimming dumps it."""
    return message.model_dump()


class BareToolCall(BaseModel):
    name: str
    arguments: dict[str, Any]


@workflow.defn(name="BenchBareAgent")
class BareAgentWorkflow:
    @workflow.run
    async def run(self, input: BareAgentInput) -> str:
        conversation = [Message.user(input.prompt)]
        for turn in range(input.max_turns):
            response: BareModelResponse = await workflow.execute_activity(
                BARE_MODEL_ACTIVITY,
                BareModelRequest(
                    model=input.model, messages=[_plain(m) for m in conversation], turn=turn
                ),
                result_type=BareModelResponse,
                start_to_close_timeout=timedelta(seconds=60),
            )
            message = Message.model_validate(response.message)
            conversation.append(message)
            if not message.tool_calls:
                return message.content or ""
            for call in message.tool_calls:
                output: str = await workflow.execute_activity(
                    call.name,
                    BareToolCall(name=call.name, arguments=json.loads(call.arguments)),
                    result_type=str,
                    start_to_close_timeout=timedelta(seconds=60),
                )
                conversation.append(Message.tool(call.id, call.name, output))
        return "turn limit"


def bare_activities(tools: dict[str, Any]) -> list[Any]:
    """The bare model activity plus one activity per plain function in `tools`."""

    @activity.defn(name=BARE_MODEL_ACTIVITY)
    async def model(request: BareModelRequest) -> BareModelResponse:
        messages = [Message.model_validate(m) for m in request.messages]
        typed = ModelRequest(model=request.model, messages=messages, turn=request.turn)
        response: ModelResponse = await resolve_model(typed.model).complete(typed)
        return BareModelResponse(message=_plain(response.message))

    def make(name: str, fn: Any) -> Any:
        @activity.defn(name=name)
        async def run_tool(call: BareToolCall) -> str:
            result = fn(**call.arguments)
            return result if isinstance(result, str) else json.dumps(result)

        return run_tool

    return [model, *(make(name, fn) for name, fn in tools.items())]
