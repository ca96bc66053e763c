"""`DurableToolsPlugin` in an application's own client and `Worker`, beside other plugins."""

from __future__ import annotations

import asyncio
import base64
import json
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.client import Client, Plugin
from temporalio.converter import DataConverter, PayloadCodec
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from durable_tools import (
    DurableTools,
    DurableToolsPlugin,
    RunStatus,
    ToolRegistry,
    build_worker,
    connect,
)
from support import answer, assert_not_wedged, calls, write_script


def make_registry(log: list[Any]) -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    def lookup(key: str) -> str:
        """Look a key up.

        Args:
            key: The key.
        """
        log.append(key)
        return f"value of {key}"

    return registry


async def plugin_client(env: WorkflowEnvironment, plugins: Sequence[Plugin]) -> Client:
    """A client as an application makes it: `Client.connect` with plugins, no converter."""
    return await Client.connect(
        env.client.service_client.config.target_host,
        namespace=env.client.namespace,
        plugins=list(plugins),
    )


async def run_lookup(client: Client, task_queue: str, tmp_path: Path, secret: str = "k1") -> Any:
    model = write_script(tmp_path, [calls(("c1", "lookup", {"key": secret})), answer("found it")])
    run = await DurableTools(client, task_queue).start(f"find {secret}", model=model)
    result = await asyncio.wait_for(run.result(), 60)
    await assert_not_wedged(run.handle)
    return run, result


async def test_a_plain_worker_from_a_plugin_client_runs_agents(
    env: WorkflowEnvironment, task_queue: str, tmp_path: Path
) -> None:
    log: list[Any] = []
    client = await plugin_client(env, [DurableToolsPlugin(make_registry(log))])
    # The application's worker names none of durable-tools' workflows or activities.
    async with Worker(client, task_queue=task_queue):
        _, result = await run_lookup(client, task_queue, tmp_path)
    assert result.status == RunStatus.COMPLETED
    assert result.final_answer == "found it"
    assert log == ["k1"]


@pytest.mark.parametrize("otel_first", [False, True])
async def test_composes_with_the_opentelemetry_plugin(
    env: WorkflowEnvironment, task_queue: str, tmp_path: Path, otel_first: bool
) -> None:
    # In a fresh interpreter: the tracer provider is process-global (see the script).
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(Path(__file__).with_name("plugin_otel_check.py")),
        env.client.service_client.config.target_host,
        env.client.namespace,
        task_queue,
        str(tmp_path),
        "1" if otel_first else "0",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 90)
    assert process.returncode == 0, err.decode()[-2000:]
    seen = json.loads(out.decode().strip().splitlines()[-1])
    assert seen["status"] == "completed" and seen["ran"] == ["k1"]
    # Both plugins' sandbox pass-throughs survive, whichever comes first.
    assert {"opentelemetry", "durable_tools.messages"} <= set(seen["passthrough"])
    assert "RunWorkflow:AgentWorkflow" in seen["spans"]
    assert "RunActivity:lookup" in seen["spans"]


class Rot13Base64Codec(PayloadCodec):
    """A stand-in for an encrypting codec: the server never sees the plain payload."""

    ENCODING = b"binary/test-codec"

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [
            Payload(
                metadata={"encoding": self.ENCODING},
                data=base64.b64encode(p.SerializeToString()[::-1]),
            )
            for p in payloads
        ]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        out = []
        for p in payloads:
            if p.metadata.get("encoding") != self.ENCODING:
                out.append(p)
                continue
            decoded = Payload()
            decoded.ParseFromString(base64.b64decode(p.data)[::-1])
            out.append(decoded)
        return out


async def test_payload_codec_is_composed_into_the_data_converter(
    env: WorkflowEnvironment, task_queue: str, tmp_path: Path
) -> None:
    log: list[Any] = []
    codec = Rot13Base64Codec()
    client = await plugin_client(env, [DurableToolsPlugin(make_registry(log), payload_codec=codec)])
    assert client.data_converter.payload_codec is codec
    secret = f"needle-{uuid.uuid4().hex[:8]}"
    async with Worker(client, task_queue=task_queue):
        run, result = await run_lookup(client, task_queue, tmp_path, secret)
    assert result.final_answer == "found it"
    assert log == [secret]
    # Read with the session's plain client: every payload in history is the codec's.
    history = await env.client.get_workflow_handle(run.run_id).fetch_history()
    raw = b"".join(event.SerializeToString() for event in history.events)
    assert secret.encode() not in raw
    assert Rot13Base64Codec.ENCODING in raw


async def test_connect_takes_a_payload_codec(env: WorkflowEnvironment) -> None:
    codec = Rot13Base64Codec()
    client = await connect(
        env.client.service_client.config.target_host, env.client.namespace, payload_codec=codec
    )
    assert client.data_converter.payload_codec is codec


def test_a_custom_payload_converter_is_refused() -> None:
    plugin = DurableToolsPlugin(ToolRegistry())
    with pytest.raises(ValueError, match="not pydantic's"):
        plugin.configure_client(
            {"data_converter": DataConverter(payload_converter_class=object)}  # type: ignore[typeddict-item]
        )


async def test_rate_limited_tools_run_on_the_plugins_limited_workers(
    env: WorkflowEnvironment, task_queue: str, tmp_path: Path
) -> None:
    log: list[Any] = []
    registry = ToolRegistry()

    @registry.tool(read_only=True, max_concurrent=1)
    def lookup(key: str) -> str:
        """Look a key up, one at a time.

        Args:
            key: The key.
        """
        log.append(key)
        return f"value of {key}"

    plugin = DurableToolsPlugin(registry)
    client = await plugin_client(env, [plugin])
    limited = plugin.limited_workers(client, task_queue)
    assert [w.task_queue for w in limited] == [f"{task_queue}.tool.lookup"]
    # The limited worker serves the one tool, not the workflow and every activity.
    assert not limited[0].config(active_config=True).get("workflows")
    assert len(limited[0].config(active_config=True)["activities"]) == 1
    async with Worker(client, task_queue=task_queue), limited[0]:
        _, result = await run_lookup(client, task_queue, tmp_path)
    assert result.status == RunStatus.COMPLETED
    assert log == ["k1"]


async def test_build_worker_refuses_a_client_that_carries_the_plugin(
    env: WorkflowEnvironment,
) -> None:
    registry = ToolRegistry()
    client = await plugin_client(env, [DurableToolsPlugin(registry)])
    with pytest.raises(ValueError, match="already carries a DurableToolsPlugin"):
        build_worker(client, registry)


def _worker_parts(worker: Worker) -> tuple[list[str], list[str]]:
    config = worker.config(active_config=True)
    workflows = sorted(w.__name__ for w in config.get("workflows", ()))
    activities = sorted(
        getattr(a, "__temporal_activity_definition").name or "<dynamic>"
        for a in config.get("activities", ())
    )
    return workflows, activities


async def test_build_worker_and_the_plugin_build_the_same_worker(
    env: WorkflowEnvironment, task_queue: str
) -> None:
    """One worker entry: a plugin-built worker has every workflow and activity
    `build_worker` gives (MCP `list_changed` needs the late tools' dynamic activity)."""
    built = build_worker(env.client, make_registry([]), task_queue=task_queue)
    client = await plugin_client(env, [DurableToolsPlugin(make_registry([]))])
    plain = Worker(client, task_queue=task_queue)
    assert _worker_parts(plain) == _worker_parts(built)
    workflows, activities = _worker_parts(plain)
    assert "<dynamic>" in activities and "lookup" in activities
    assert "AgentWorkflow" in workflows
