"""The worker's runner answers serialization-context lookups without entering the sandbox,
and answers them exactly as the SDK's runner does (a codec keyed by context, such as a
per-activity key, sees the same contexts)."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import pytest
from temporalio import activity, workflow
from temporalio.api.common.v1 import Payload
from temporalio.client import Client
from temporalio.converter import (
    ActivitySerializationContext,
    PayloadCodec,
    SerializationContext,
    WithSerializationContext,
    WorkflowSerializationContext,
)
from temporalio.worker import Worker, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner
from temporalio.worker.workflow_sandbox._runner import _Instance

from durable_tools import DurableToolsPlugin, ToolRegistry
from durable_tools.worker import workflow_runner


@activity.defn(name="context-echo")
async def echo(text: str) -> str:
    return f"echo {text}"


@workflow.defn(name="ContextProbe", sandboxed=True)
class ContextProbe:
    @workflow.run
    async def run(self, text: str) -> str:
        remote = await workflow.execute_activity(
            "context-echo",
            text,
            result_type=str,
            start_to_close_timeout=timedelta(seconds=30),
            summary=f"echo {text}",
        )
        local = await workflow.execute_local_activity(
            "context-echo",
            remote,
            result_type=str,
            start_to_close_timeout=timedelta(seconds=30),
            summary="local echo",
        )
        return local


def _shape(context: SerializationContext | None) -> tuple[Any, ...]:
    """What a codec can key on, the run's own id left out (it differs between runs)."""
    if isinstance(context, ActivitySerializationContext):
        fields = dataclasses.asdict(context)
        fields.pop("workflow_id")
        fields.pop("activity_id")
        return ("activity", tuple(sorted(fields.items())))
    if isinstance(context, WorkflowSerializationContext):
        return ("workflow", context.namespace)
    return (type(context).__name__,)


class _RecordingCodec(PayloadCodec, WithSerializationContext):
    """Records the context of every payload it encodes on the worker's side."""

    def __init__(self, seen: list[tuple[Any, ...]], context: SerializationContext | None) -> None:
        self.seen = seen
        self.context = context

    def with_context(self, context: SerializationContext) -> _RecordingCodec:
        return _RecordingCodec(self.seen, context)

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        self.seen.extend(_shape(self.context) for _ in payloads)
        return list(payloads)

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return list(payloads)


async def _contexts(
    client: Client, runner: WorkflowRunner, task_queue: str
) -> tuple[list[Any], int]:
    """The contexts a run's payloads were encoded with, and how often the run's sandbox
    ran code to look one up."""
    seen: list[tuple[Any, ...]] = []
    config = client.config()
    converter = dataclasses.replace(
        config["data_converter"], payload_codec=_RecordingCodec(seen, None)
    )
    recording = Client(**{**config, "data_converter": converter})
    lookups = 0
    original = _Instance._run_code

    def counting(self: _Instance, code: str, **extra: Any) -> None:
        nonlocal lookups
        if "get_serialization_context" in code or "get_external_store_context" in code:
            lookups += 1
        original(self, code, **extra)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_Instance, "_run_code", counting)
        async with Worker(
            recording,
            task_queue=task_queue,
            workflows=[ContextProbe],
            activities=[echo],
            workflow_runner=runner,
        ):
            answer = await recording.execute_workflow(
                ContextProbe.run, "hi", id=f"context-{uuid.uuid4().hex}", task_queue=task_queue
            )
    assert answer == "echo echo hi"
    return sorted(seen), lookups


async def test_the_worker_runner_gives_codecs_the_sdk_runners_contexts(client: Client) -> None:
    ours_runner = workflow_runner()
    sdk_runner = SandboxedWorkflowRunner(restrictions=ours_runner.restrictions)
    task_queue = f"context-{uuid.uuid4().hex[:8]}"  # one for both: codecs may key on it
    sdk, sdk_lookups = await _contexts(client, sdk_runner, task_queue)
    ours, our_lookups = await _contexts(client, ours_runner, task_queue)
    assert ours == sdk
    kinds = {shape[0] for shape in ours}
    assert kinds == {"activity", "workflow"}  # both kinds were looked up and compared
    assert sdk_lookups > 0  # the SDK's runner compiles code in the sandbox for each...
    assert our_lookups == 0  # ...the worker's runner asks the run's instance directly


def test_the_plugin_upgrades_the_sdk_runner_and_keeps_a_custom_one() -> None:
    plugin = DurableToolsPlugin(ToolRegistry())
    configured = plugin.configure_worker({"workflow_runner": SandboxedWorkflowRunner()})  # type: ignore[typeddict-item]
    assert type(configured["workflow_runner"]).__name__ == "ContextLookupRunner"

    @dataclasses.dataclass(frozen=True)
    class Custom(SandboxedWorkflowRunner):
        pass

    kept = plugin.configure_worker({"workflow_runner": Custom()})  # type: ignore[typeddict-item]
    assert type(kept["workflow_runner"]) is Custom
