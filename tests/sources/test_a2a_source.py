"""A2A remote agents as a tool source, against a real A2A agent (the official SDK's
server side) on 127.0.0.1, a real Temporal dev server and a scripted model."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from a2a_test_server import A2AServer
from temporalio.client import Client, WorkflowHandle

from durable_tools import DurableTools, RunStatus, ToolContext, ToolRegistry
from durable_tools.sources import (
    A2AError,
    A2AProvider,
    BearerSecret,
    ProviderRefresher,
    attach_a2a,
    attach_a2a_sync,
)
from durable_tools.sources._a2a_call import message_id_for
from durable_tools.tools._progress import parse_beat
from support import answer, assert_not_wedged, calls, running_worker, write_script


@pytest.fixture
def agent() -> Iterator[A2AServer]:
    server = A2AServer().start()
    yield server
    server.stop()


@pytest.fixture
def polling_agent() -> Iterator[A2AServer]:
    """An agent whose card says it does not stream: calls poll `GetTask`."""
    server = A2AServer(streaming=False).start()
    yield server
    server.stop()


def replies_by_id(conversation: list[Any]) -> dict[str, str]:
    return {m.tool_call_id: m.content or "" for m in conversation if m.role == "tool"}


async def heartbeat_details(client: Client, handle: WorkflowHandle[Any, Any]) -> list[Any]:
    """What the run's pending activities keep to resume from (their heartbeat details,
    decoded; for a tool reporting typed progress, the `details` it asked to get back)."""
    description = await handle.describe()
    found = []
    for pending in description.raw_description.pending_activities:
        if pending.heartbeat_details.payloads:
            for value in await client.data_converter.decode(pending.heartbeat_details.payloads):
                beat = parse_beat(value)
                found.append(beat.details if beat is not None else value)
    return found


async def wait_until(check: Any, what: str, timeout: float = 20) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"never saw {what}")
        await asyncio.sleep(0.1)


# ------------------------------------------------------------------------- discovery


async def test_skills_become_tools_with_catalog_metadata(agent: A2AServer) -> None:
    registry = ToolRegistry()
    tools = await attach_a2a(registry, agent.url, exclude=["ask"])
    assert [t.spec.name for t in tools] == [
        "test_agent__echo",
        "test_agent__slow",
        "test_agent__fail",
    ]
    echo = registry.get("test_agent__echo").spec
    assert echo.transport == "a2a" and echo.source == "a2a:Test Agent/echo"
    assert "Repeats the message." in echo.description
    assert echo.input_schema["required"] == ["message"]
    assert (
        not echo.safety.read_only and not echo.safety.idempotent
    )  # a remote agent may do anything


async def test_agent_mode_registers_one_tool(agent: A2AServer) -> None:
    registry = ToolRegistry()
    tools = await attach_a2a(registry, f"{agent.url}/.well-known/agent-card.json", mode="agent")
    assert [t.spec.name for t in tools] == ["test_agent"]
    assert "Slow job" in tools[0].spec.description  # the skills are listed for the model


def test_attach_sync_outside_an_event_loop(agent: A2AServer) -> None:
    registry = ToolRegistry()
    tools = attach_a2a_sync(registry, agent.url, prefix="helper", include=["echo"])
    assert [t.spec.name for t in tools] == ["helper__echo"]


async def test_unreachable_card_is_a_clear_error() -> None:
    with pytest.raises(A2AError, match="could not read the agent card"):
        await attach_a2a(ToolRegistry(), "http://127.0.0.1:9/")


async def test_input_required_returns_the_question(agent: A2AServer) -> None:
    registry = ToolRegistry()
    await attach_a2a(registry, agent.url, include=["ask"])
    ctx = ToolContext(tool_call_id="c1", tool_name="test_agent__ask", idempotency_key="run/c1")
    result = await registry.invoke("test_agent__ask", {"message": "weather?"}, ctx)
    assert "Which city do you mean?" in str(result) and "task_id=" in str(result)


# ------------------------------------------------------------------------ end to end


async def test_run_calls_a_skill_with_a_worker_secret(
    client: Client, task_queue: str, tmp_path: Path, agent: A2AServer
) -> None:
    registry = ToolRegistry()
    await attach_a2a(registry, agent.url, auth=BearerSecret("agent_token"), include=["echo"])
    model = write_script(
        tmp_path,
        [
            calls(("e1", "test_agent__echo", {"message": "hello", "data": {"n": 1}})),
            answer("done"),
        ],
    )
    async with running_worker(client, registry, task_queue, secrets={"agent_token": "s3cret"}):
        run = await DurableTools(client, task_queue).start("echo via A2A", model=model)
        result = await run.result()
        conversation = await run.conversation()
        await assert_not_wedged(run.handle)
    assert result.status == RunStatus.COMPLETED
    assert replies_by_id(conversation)["e1"] == 'echo: hello {"n": 1.0}'
    assert agent.state.authorization and set(agent.state.authorization) == {"Bearer s3cret"}
    # The message id and metadata carry the call's idempotency key, the same on every attempt.
    [message] = agent.state.messages
    key = message["metadata"]["idempotency_key"]
    assert key.endswith("/e1") and message["messageId"] == message_id_for(key)


async def test_slow_task_progress_reaches_the_activity(
    client: Client, task_queue: str, tmp_path: Path, agent: A2AServer
) -> None:
    registry = ToolRegistry()
    await attach_a2a(registry, agent.url, include=["slow"])
    model = write_script(
        tmp_path, [calls(("s1", "test_agent__slow", {"message": "work"})), answer("ok")]
    )
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("slow via A2A", model=model)

        async def step_three_heartbeated() -> bool:
            details = await heartbeat_details(client, run.handle)
            return any(isinstance(d, dict) and d.get("message") == "step 3/3" for d in details)

        await wait_until(step_three_heartbeated, "step 3/3 in the activity's heartbeat details")
        [details] = await heartbeat_details(client, run.handle)
        assert details["state"] == "working" and details["a2a_task_id"]
        # People watching the run read the agent's status as the call's progress.
        [shown] = await run.progress()
        assert shown.progress.message == "working: step 3/3"
        agent.state.release.set()
        result = await run.result()
        conversation = await run.conversation()
        await assert_not_wedged(run.handle)
    assert result.status == RunStatus.COMPLETED
    assert replies_by_id(conversation)["s1"] == "slow work done"
    assert agent.state.cancelled == []


async def test_cancelling_the_run_cancels_the_remote_task(
    client: Client, task_queue: str, tmp_path: Path, agent: A2AServer
) -> None:
    registry = ToolRegistry()
    await attach_a2a(registry, agent.url, include=["slow"])
    model = write_script(
        tmp_path, [calls(("s1", "test_agent__slow", {"message": "work"})), answer("never")]
    )
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("cancel A2A", model=model)
        await wait_until(
            lambda: asyncio.to_thread(agent.state.slow_started.is_set), "the slow task start"
        )

        async def task_heartbeated() -> bool:
            return any(
                isinstance(d, dict) and d.get("a2a_task_id")
                for d in await heartbeat_details(client, run.handle)
            )

        await wait_until(task_heartbeated, "the task id in the heartbeat details")
        [details] = await heartbeat_details(client, run.handle)
        await run.cancel("stop")
        result = await run.result()
        await assert_not_wedged(run.handle)
    assert result.status == RunStatus.CANCELLED
    assert agent.state.cancelled == [details["a2a_task_id"]]


async def test_failing_skill_gives_the_model_the_error(
    client: Client, task_queue: str, tmp_path: Path, agent: A2AServer
) -> None:
    registry = ToolRegistry()
    await attach_a2a(registry, agent.url, include=["fail"])
    model = write_script(
        tmp_path, [calls(("f1", "test_agent__fail", {"message": "print"})), answer("sorry")]
    )
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("fail via A2A", model=model)
        result = await run.result()
        conversation = await run.conversation()
        await assert_not_wedged(run.handle)
    assert result.status == RunStatus.COMPLETED and result.final_answer == "sorry"
    reply = replies_by_id(conversation)["f1"]
    assert "the printer is on fire" in reply and "failed" in reply
    assert len(agent.state.messages) == 1  # a failed task is not retried


async def test_agent_mode_run_polls_a_non_streaming_agent(
    client: Client, task_queue: str, tmp_path: Path, polling_agent: A2AServer
) -> None:
    registry = ToolRegistry()
    await attach_a2a(registry, polling_agent.url, mode="agent", name="helper", poll_interval=0.1)
    model = write_script(
        tmp_path, [calls(("a1", "helper", {"message": "hi there"})), answer("done")]
    )
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("agent mode", model=model)
        result = await run.result()
        conversation = await run.conversation()
        await assert_not_wedged(run.handle)
    assert result.status == RunStatus.COMPLETED
    assert replies_by_id(conversation)["a1"] == "echo: hi there"
    assert "skill_id" not in polling_agent.state.messages[0]["metadata"]


async def test_a_retried_attempt_follows_the_recorded_task(agent: A2AServer) -> None:
    registry = ToolRegistry()
    await attach_a2a(registry, agent.url, include=["echo"])
    reported: list[Any] = []
    first = ToolContext(
        tool_call_id="c1",
        tool_name="test_agent__echo",
        idempotency_key="run/c1",
        _progress=reported.append,
    )
    first_result = await registry.invoke("test_agent__echo", {"message": "once"}, first)
    assert first_result.content[0].text == "echo: once"
    # A second attempt of the same call, after a crash: the heartbeat details name the task.
    retry = ToolContext(
        tool_call_id="c1",
        tool_name="test_agent__echo",
        idempotency_key="run/c1",
        attempt=2,
        heartbeat_details=reported[-1],
    )
    resumed = await registry.invoke("test_agent__echo", {"message": "once"}, retry)
    assert resumed.content[0].text == "echo: once"
    assert len(agent.state.messages) == 1  # the message was not sent again


async def test_a_card_read_again_adds_changes_and_withdraws_skills(agent: A2AServer) -> None:
    registry = ToolRegistry()
    provider = A2AProvider(agent.url, prefix="test")
    refresher = ProviderRefresher(registry, [provider])
    await refresher.attach()
    assert {"test__echo", "test__ask", "test__fail"} <= set(registry.names())
    assert not (await refresher.refresh())[provider.label]  # the same card: nothing changes
    # The agent drops a skill and rewords another, while the worker runs.
    skills = agent.card.skills
    kept = [s for s in skills if s.id != "fail"]
    del skills[:]
    skills.extend(kept)
    for skill in skills:
        if skill.id == "echo":
            skill.description = "Repeats the message, loudly."
    change = (await refresher.refresh())[provider.label]
    assert change.changed == ["test__echo"] and change.removed == ["test__fail"]
    assert "loudly" in registry.get("test__echo").spec.description
    assert registry.is_withdrawn("test__fail")
    agent.stop()  # the agent goes away: its tools stay as they were
    assert not (await refresher.refresh())[provider.label]
    assert provider.label in refresher.errors and "test__echo" in registry
