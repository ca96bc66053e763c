"""The baseline: an agent loop written by hand on Temporal, with no framework.

Each turn runs one model activity (the same scripted adapter durable-tools uses, handed the
whole conversation) and one activity per tool call, and nothing else: no catalog, no
validation, no timeline, no search attributes, no artifact store. This is what the engine
itself costs for the same work.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from pydantic import BaseModel
from temporalio import activity, workflow

with workflow.unsafe.imports_passed_through():
    from durable_tools.messages import Message, ModelRequest, ModelResponse
    from durable_tools.models import resolve_model

__all__ = ["BareAgentInput", "BareAgentWorkflow", "BareToolCall", "bare_activities"]

BARE_MODEL_ACTIVITY = "bench.bare_model"


class BareAgentInput(BaseModel):
    model: str
    prompt: str
    max_turns: int = 100


class BareToolCall(BaseModel):
    name: str
    arguments: dict[str, Any]


@workflow.defn(name="BenchBareAgent")
class BareAgentWorkflow:
    @workflow.run
    async def run(self, input: BareAgentInput) -> str:
        conversation = [Message.user(input.prompt)]
        for turn in range(input.max_turns):
            response: ModelResponse = await workflow.execute_activity(
                BARE_MODEL_ACTIVITY,
                ModelRequest(model=input.model, messages=conversation, turn=turn),
                result_type=ModelResponse,
                start_to_close_timeout=timedelta(seconds=60),
            )
            conversation.append(response.message)
            if not response.message.tool_calls:
                return response.message.content or ""
            for call in response.message.tool_calls:
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
    async def model(request: ModelRequest) -> ModelResponse:
        return await resolve_model(request.model).complete(request)

    def make(name: str, fn: Any) -> Any:
        @activity.defn(name=name)
        async def run_tool(call: BareToolCall) -> str:
            result = fn(**call.arguments)
            return result if isinstance(result, str) else json.dumps(result)

        return run_tool

    return [model, *(make(name, fn) for name, fn in tools.items())]
