"""The dynamic activity that serves tools registered after the worker started."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from temporalio.common import RawValue
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from durable_tools import ToolRegistry
from durable_tools._activities._runtime import ToolRuntime
from durable_tools._activities._types import ToolInvocation
from durable_tools.sources._mcp_activity import late_tools_activity
from durable_tools.tools import FileSystemArtifactStore


def environment(activity_type: str) -> ActivityEnvironment:
    env = ActivityEnvironment()
    env.payload_converter = pydantic_data_converter.payload_converter
    env.info = dataclasses.replace(env.info, activity_type=activity_type, is_local=True)
    return env


def invocation(name: str, **arguments: object) -> list[RawValue]:
    payload = pydantic_data_converter.payload_converter.to_payload(
        ToolInvocation(
            call_id="c1",
            tool_name=name,
            arguments=dict(arguments),
            workflow_id="run-1",
            idempotency_key="run-1/c1",
        )
    )
    return [RawValue(payload)]


async def test_a_tool_registered_later_is_served_under_its_own_name(tmp_path: Path) -> None:
    registry = ToolRegistry()
    runtime = ToolRuntime(registry=registry, artifact_store=FileSystemArtifactStore(tmp_path))
    late = late_tools_activity(runtime)  # built before the tool exists, as on a worker

    @registry.tool(read_only=True)
    def shout(text: str) -> str:
        """Upper-case the text."""
        return text.upper()

    outcome = await environment("shout").run(late, invocation("shout", text="hi"))
    assert outcome.content == "HI" and not outcome.is_error and outcome.tool_name == "shout"


@pytest.mark.parametrize(
    ("activity_type", "message"),
    [
        ("gone", "no tool named 'gone' is registered on this worker"),
        ("not_a_tool", "no activity 'not_a_tool'"),
    ],
)
async def test_an_unknown_activity_type_fails_retryably_as_temporal_would(
    tmp_path: Path, activity_type: str, message: str
) -> None:
    runtime = ToolRuntime(registry=ToolRegistry(), artifact_store=FileSystemArtifactStore(tmp_path))
    late = late_tools_activity(runtime)
    args = (
        invocation("gone")
        if activity_type == "gone"
        else [RawValue(pydantic_data_converter.payload_converter.to_payload("just text"))]
    )
    with pytest.raises(ApplicationError) as failed:
        await environment(activity_type).run(late, args)
    # Retryable, like Temporal's own "not registered on this worker": during a rolling
    # deploy another worker of the queue may have it.
    assert not failed.value.non_retryable and message in str(failed.value)
