"""What the framework integration tests share: the prefix of the runtime's handlers on the
host, the approval-gated tool every framework's agent pays with, the scripted models
(Pydantic AI's `FunctionModel` and a fake OpenAI server's Responses API) that call one
tool and then say what they read, and the clients with each framework's plugin."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agents import OpenAIProvider, set_tracing_disabled
from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo
from temporalio.client import Client
from temporalio.converter import DataConverter
from temporalio.openai_agents import OpenAIAgentsPlugin

from durable_tools.tools import ToolRegistry
from fake_openai import FakeOpenAIServer, RecordedRequest, responses_response

PREFIX = "tools_"
"""The handler prefix every test's `ToolRuntime` registers under."""


PAY_NOTES = "Money leaves the company."
"""`pay`'s safety notes, which the framework's model reads in the tool's description."""


def pay_registry(ran: list[str]) -> ToolRegistry:
    """`pay(order_id)`, approved by a person; each run appends its order to `ran`."""
    registry = ToolRegistry()

    @registry.tool(approval=True, idempotent=True, safety_notes=PAY_NOTES)
    def pay(order_id: str) -> str:
        """Pay an order's invoice (a person approves it)."""
        ran.append(order_id)
        return f"paid {order_id}"

    return registry


def tool_returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    """The tool results a Pydantic AI model has read so far."""
    return [
        part
        for message in messages
        for part in getattr(message, "parts", [])
        if isinstance(part, ToolReturnPart)
    ]


PydanticModelFunction = Callable[[list[ModelMessage], AgentInfo], ModelResponse]


def call_then_report(tool: str, arguments: dict[str, Any], call_id: str) -> PydanticModelFunction:
    """A Pydantic AI `FunctionModel` function: calls `tool` once, then answers
    `I read: <the first result>`."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = tool_returns(messages)
        if not returns:
            return ModelResponse(parts=[ToolCallPart(tool, arguments, tool_call_id=call_id)])
        return ModelResponse(parts=[TextPart(f"I read: {returns[0].content}")])

    return model


def function_outputs(request: RecordedRequest) -> list[str]:
    """The tool outputs an OpenAI Responses API request sends back to the model."""
    return [
        item["output"]
        for item in request.json.get("input", [])
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]


def responses_call_then_report(
    tool: str, arguments: str, call_id: str
) -> Callable[[RecordedRequest], dict[str, Any]]:
    """A fake OpenAI server's responder over the Responses API: calls `tool` once (with
    `arguments`, JSON text), then answers `I read: <the first output>`."""

    def model(request: RecordedRequest) -> dict[str, Any]:
        outputs = function_outputs(request)
        if outputs:
            return responses_response(text=f"I read: {outputs[0]}")
        return responses_response(function_calls=[(call_id, tool, arguments)])

    return model


def with_plugins(client: Client, plugins: list[Any], converter: DataConverter) -> Client:
    """The session's server through a client with `plugins` and `converter`."""
    return Client(
        client.service_client, namespace=client.namespace, data_converter=converter, plugins=plugins
    )


def pydantic_ai_client(client: Client) -> Client:
    """A client with Pydantic AI's plugin (its payload converter is pydantic's, as ours)."""
    return with_plugins(client, [PydanticAIPlugin()], client.config()["data_converter"])


def openai_agents_client(client: Client, fake: FakeOpenAIServer | None = None) -> Client:
    """A client with the OpenAI Agents plugin, which sets its own payload converter (the
    client starts from the default one); its model activity asks `fake` over the
    Responses API, as the SDK does by default (no model: a client that only starts runs)."""
    if fake is None:
        return with_plugins(client, [OpenAIAgentsPlugin()], DataConverter())
    set_tracing_disabled(True)  # no trace export to api.openai.com from the worker
    provider = OpenAIProvider(api_key="sk-fake", base_url=fake.base_url, use_responses=True)
    return with_plugins(client, [OpenAIAgentsPlugin(model_provider=provider)], DataConverter())
