"""A model adapter of your own: register a prefix, then use `PREFIX:REST` as the model.

This one is a tiny rule-based "model" that adds two numbers with a tool, so it runs
without any provider; a real adapter calls its provider in `complete` the same way.
Uses the Temporal server at TEMPORAL_ADDRESS, or starts the embedded dev server.
Run it with `python examples/custom_model_adapter.py`.
"""

import asyncio
import json
import os
import re
import sys

from durable_tools import AgentConfig, DurableTools, Message, ToolCall, ToolRegistry, build_worker
from durable_tools.messages import ModelRequest, ModelResponse, Usage
from durable_tools.models import ModelError, register_model_adapter
from durable_tools.server import ensure_server

registry = ToolRegistry()


@registry.tool(read_only=True)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class AddingModel:
    """Calls `add` on the first two numbers of the prompt, then reports the result."""

    def __init__(self, rest: str) -> None:
        self.name = rest  # the part of the spec after `adding:`

    async def complete(self, request: ModelRequest) -> ModelResponse:
        last = request.messages[-1]
        if last.role == "tool":  # the tool answered: the model's final answer
            return ModelResponse(
                message=Message(role="assistant", content=f"The sum is {last.content}."),
                finish_reason="stop",
            )
        if not any(tool.name == "add" for tool in request.tools):
            # Not worth retrying: say so, and Temporal fails the run with this reason.
            raise ModelError("adding: the `add` tool is not offered", retryable=False)
        numbers = [int(n) for n in re.findall(r"-?\d+", last.content or "")][:2]
        a, b = numbers + [0] * (2 - len(numbers))
        call = ToolCall(
            id=f"add_{request.turn}", name="add", arguments=json.dumps({"a": a, "b": b})
        )
        return ModelResponse(
            message=Message(role="assistant", tool_calls=[call]),
            finish_reason="tool_calls",
            usage=Usage(input_tokens=len(request.messages), output_tokens=1),
        )


async def main() -> None:
    # In every worker process that runs model activities, before the worker starts.
    register_model_adapter("adding", AddingModel)
    client, server = await ensure_server()
    try:
        async with build_worker(client, registry, task_queue="custom-model"):
            tools = DurableTools(client, task_queue="custom-model")
            run = await tools.start("What is 2 plus 40?", config=AgentConfig(model="adding:v1"))
            result = await run.result()
            print("status:", result.status.value)
            print("answer:", result.final_answer)
    finally:
        if server is not None:
            await server.stop()


if __name__ == "__main__":
    asyncio.run(main())
    # Leave without interpreter teardown: the Temporal SDK's Rust threads outlive the
    # event loop and can crash a finalizing interpreter (temporalio/sdk-python#300).
    sys.stdout.flush()
    os._exit(0)
