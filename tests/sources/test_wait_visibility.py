"""Every durable wait is seen the same way, on a real dev server.

A run waiting for the user's answer to an MCP server's question, or for a client to run
a callback tool's call, shows it as a run waiting for an approval does: its status and
the `AgentStatus` search attribute (`awaiting_input`, `awaiting_callback`), the
`AwaitingTool` search attribute, the UI's current details saying how to resume it,
`durable-tools pending`, and a notification. A question never waits unbounded: without
the tool's `schedule_to_close_timeout` it ends at `AgentConfig.input_timeout_seconds`.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import Client

from cli_support import cli, cli_env, cli_json  # noqa: F401  (a fixture)
from durable_tools import (
    AgentConfig,
    AgentRun,
    DurableTools,
    NotificationConfig,
    RunStatus,
    ToolRegistry,
    WebhookTarget,
    answer_input,
    search_attributes as sa,
)
from durable_tools.callbacks import answer_callback, pending_callbacks
from durable_tools.sources import McpPool, McpStdio, attach_mcp
from durable_tools.workflows import RunSnapshot
from support import answer, assert_not_wedged, calls, running_worker, wait_for, write_script
from webhook_support import Receiver, webhook_receiver

SERVER = str(Path(__file__).with_name("mcp_elicit_server.py"))
GREET = ("g1", "ask__greet", {"greeting": "hello"})
SECRET = "whsec-visibility-test"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with webhook_receiver() as state:
        state.url += "/hook"  # the config below sends to the receiver's own path
        yield state


@pytest.fixture
async def pool() -> AsyncIterator[McpPool]:
    pool = McpPool(connect_timeout=20)
    yield pool
    await pool.aclose()


def config(model: str, receiver: Receiver, **fields: Any) -> AgentConfig:
    notifications = NotificationConfig(webhooks=(WebhookTarget(url=receiver.url, secret="hook"),))
    return AgentConfig(model=model, name="visible", notifications=notifications, **fields)


async def attributes(run: AgentRun, status: str) -> tuple[str | None, str | None]:
    """`AgentStatus` and `AwaitingTool` once `AgentStatus` is `status` (or the last seen)."""
    deadline = asyncio.get_running_loop().time() + 15
    while True:
        attrs = (await run.handle.describe()).typed_search_attributes
        seen = attrs.get(sa.AGENT_STATUS), attrs.get(sa.AWAITING_TOOL)
        if seen[0] == status or asyncio.get_running_loop().time() > deadline:
            return seen
        await asyncio.sleep(0.1)


async def listed_as_pending(tools: DurableTools, run_id: str) -> bool:
    """Whether `DurableTools.pending` lists the run (visibility is eventually consistent)."""
    deadline = asyncio.get_running_loop().time() + 15
    while asyncio.get_running_loop().time() < deadline:
        if any(s.run_id == run_id for s in await tools.pending()):
            return True
        await asyncio.sleep(0.2)
    return False


async def current_details(run: AgentRun) -> str:
    metadata = await run.handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
    return metadata.current_details


async def mcp_registry(pool: McpPool) -> ToolRegistry:
    registry = ToolRegistry()
    server = McpStdio(sys.executable, (SERVER,), name="ask", elicitation=True)
    await attach_mcp(registry, server, pool=pool)  # no schedule_to_close_timeout
    return registry


async def test_a_question_for_the_user_is_seen_like_an_approval(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    pool: McpPool,
    receiver: Receiver,
    cli_env: str,  # noqa: F811
    capsys: Any,
) -> None:
    model = write_script(tmp_path, [calls(GREET), answer("ok")])
    registry = await mcp_registry(pool)
    async with running_worker(client, registry, task_queue, secrets={"hook": SECRET}):
        tools = DurableTools(client, task_queue)
        run = await tools.start("greet", config=config(model, receiver))
        paused = await wait_for(run, lambda s: bool(s.pending_inputs), timeout=30)
        assert paused.status == "awaiting_input"
        [pending] = paused.pending_inputs
        # Bounded though the tool has no timeout: the agent's default deadline (a day).
        assert pending.deadline is not None
        assert (pending.deadline - pending.requested_at).total_seconds() == 86_400
        assert await attributes(run, "awaiting_input") == ("awaiting_input", "ask__greet")
        details = await current_details(run)
        assert f"`durable-tools answer {run.run_id} g1 --accept" in details
        assert await listed_as_pending(tools, run.run_id)
        code, out, err = await cli(capsys, "pending")
        assert code == 0, err
        assert f"{run.run_id}  agent visible  awaiting_input" in out
        assert f"durable-tools answer {run.run_id} g1 --accept" in out
        listed = await cli_json(capsys, "pending")
        [entry] = [e for e in listed if e["run_id"] == run.run_id]
        assert [i["call_id"] for i in entry["inputs"]] == ["g1"]
        note = await receiver.wait_for("input.requested")
        assert "Whom should I greet" not in json.dumps(note)  # the question stays in the run
        assert (note["call_id"], note["tool"], note["run_id"]) == ("g1", "ask__greet", run.run_id)
        assert note["deadline"] is not None

        await answer_input(run, "g1", "accept", {"name": "Ada"})
        assert (await run.result()).status == RunStatus.COMPLETED
        assert await attributes(run, "completed") == ("completed", "")
        await assert_not_wedged(run.handle)


async def test_an_unanswered_question_ends_at_the_default_deadline(
    client: Client, task_queue: str, tmp_path: Path, pool: McpPool, receiver: Receiver
) -> None:
    model = write_script(tmp_path, [calls(GREET), answer("ok")])
    registry = await mcp_registry(pool)
    async with running_worker(client, registry, task_queue, secrets={"hook": SECRET}):
        tools = DurableTools(client, task_queue)
        run = await tools.start("greet", config=config(model, receiver, input_timeout_seconds=2))
        assert (await run.result()).status == RunStatus.COMPLETED
        replies = [m.content or "" for m in await run.conversation() if m.role == "tool"]
        assert "the user did not answer the MCP server's question within 2s" in replies[0]
        events = [e.event for e in await run.events() if e.event.startswith("input.")]
        assert events == ["input.requested", "input.expired"]
        await receiver.wait_for("input.expired")
        await assert_not_wedged(run.handle)


def test_the_default_deadline_is_a_day_and_configurable() -> None:
    assert AgentConfig(model="scripted:x").input_timeout_seconds == 86_400
    assert AgentConfig(model="scripted:x", input_timeout_seconds=60).input_timeout_seconds == 60


@pytest.mark.parametrize("seconds", [0, -1, float("nan"), float("inf"), 31 * 86_400, "1e999"])
def test_the_default_deadline_is_bounded(seconds: Any) -> None:
    with pytest.raises(ValueError, match="input_timeout_seconds"):
        AgentConfig(model="scripted:x", input_timeout_seconds=seconds)


def callback_registry() -> ToolRegistry:
    registry = ToolRegistry()
    registry.callback_tool(
        "get_location",
        description="Where the user's device is.",
        parameters={"type": "object", "properties": {}, "additionalProperties": False},
        timeout=600,
    )
    return registry


async def test_a_callback_call_is_seen_like_an_approval(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    receiver: Receiver,
    cli_env: str,  # noqa: F811
    capsys: Any,
) -> None:
    model = write_script(tmp_path, [calls(("c1", "get_location", {})), answer("located")])
    async with running_worker(client, callback_registry(), task_queue, secrets={"hook": SECRET}):
        tools = DurableTools(client, task_queue)
        run = await tools.start("where?", config=config(model, receiver))

        def published(snapshot: RunSnapshot) -> bool:
            return bool(snapshot.pending_callbacks)

        paused = await wait_for(run, published)
        assert paused.status == "awaiting_callback"
        expected = ("awaiting_callback", "get_location")
        assert await attributes(run, "awaiting_callback") == expected
        details = await current_details(run)
        assert f"`durable-tools callbacks serve --tools MODULE {run.run_id}`" in details
        assert await listed_as_pending(tools, run.run_id)
        code, out, err = await cli(capsys, "pending")
        assert code == 0, err
        assert f"{run.run_id}  agent visible  awaiting_callback" in out
        assert "call c1 (get_location) waits for a client" in out
        listed = await cli_json(capsys, "pending")
        [entry] = [e for e in listed if e["run_id"] == run.run_id]
        assert [c["call_id"] for c in entry["callbacks"]] == ["c1"]
        note = await receiver.wait_for("callback.published")
        assert (note["call_id"], note["tool"]) == ("c1", "get_location")

        [call] = await pending_callbacks(run.handle)
        await answer_callback(run.handle, call, output={"lat": 1})
        assert (await run.result()).status == RunStatus.COMPLETED
        assert await attributes(run, "completed") == ("completed", "")
        await assert_not_wedged(run.handle)
