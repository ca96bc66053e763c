"""A client of the session's dev server with the telemetry plugin."""

from __future__ import annotations

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.runtime import Runtime
from temporalio.testing import WorkflowEnvironment

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
