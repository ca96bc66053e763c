"""A client of the session's dev server with the telemetry plugin, and the tools its runs call."""

from __future__ import annotations

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.runtime import Runtime
from temporalio.testing import WorkflowEnvironment

from durable_tools import RetrySpec, ToolExecutionError, ToolRegistry
from durable_tools.telemetry import TelemetryPlugin


async def telemetry_client(
    env: WorkflowEnvironment, *, tracing: bool = True, runtime: Runtime | None = None
) -> Client:
    """A client of the session's server with the telemetry plugin (and `runtime`)."""
    return await Client.connect(
        env.client.service_client.config.target_host,
        namespace=env.client.namespace,
        data_converter=pydantic_data_converter,
        plugins=[TelemetryPlugin(tracing=tracing)],
        runtime=runtime,
    )


def telemetry_registry(*, with_pay: bool = False) -> ToolRegistry:
    """`add(a, b)`; `flaky(text)`, which fails once (retryable) and then echoes; and with
    `with_pay`, `pay(amount_cents)`, which needs approval."""
    registry = ToolRegistry()
    attempts: list[int] = []

    @registry.tool(read_only=True)
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @registry.tool(idempotent=True, retry=RetrySpec(initial_interval=0.05, maximum_attempts=3))
    def flaky(text: str) -> str:
        """Fails once, then echoes."""
        attempts.append(1)
        if len(attempts) == 1:
            raise ToolExecutionError("upstream 503, try later", retryable=True)
        return text

    if with_pay:

        @registry.tool(approval=True, idempotent=True)
        def pay(amount_cents: int) -> str:
            """Pay; a person approves first."""
            return f"paid {amount_cents}"

    return registry
