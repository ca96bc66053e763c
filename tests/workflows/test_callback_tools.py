"""Callback tools on a real dev server: the run publishes the call, a client runs it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.contrib.pydantic import pydantic_data_converter

from durable_tools import AgentRun, DurableTools, RunStatus, ToolRegistrationError, ToolRegistry
from durable_tools.callbacks import (
    CallbackRejected,
    PendingCallback,
    answer_callback,
    pending_callbacks,
    serve_callbacks,
)
from durable_tools.tools import FileSystemArtifactStore
from durable_tools.workflows import AgentWorkflow
from support import (
    answer,
    assert_not_wedged,
    calls,
    running_worker,
    scheduled_activities,
    wait_for,
    write_script,
)


class Location(BaseModel):
    lat: float
    lon: float


def callback_registry(*, timeout: float = 60.0, approval: bool = False) -> ToolRegistry:
    registry = ToolRegistry()
    registry.callback_tool(
        "get_location",
        description="Where the user's device is.",
        parameters={
            "type": "object",
            "properties": {"precise": {"type": "boolean"}},
            "required": ["precise"],
            "additionalProperties": False,
        },
        output=Location,
        timeout=timeout,
        approval=approval,
    )
    return registry


def test_a_callback_tool_is_declared_with_schemas_and_no_body() -> None:
    spec = callback_registry(timeout=30).get("get_location").spec
    assert spec.callback and spec.transport == "callback"
    assert spec.policy.start_to_close_timeout == 30
    assert spec.output_schema is not None and spec.output_schema["required"] == ["lat", "lon"]
    registry = ToolRegistry()
    registry.callback_tool("pick", parameters=Location)  # a pydantic model works too
    assert set(registry.get("pick").spec.input_schema["properties"]) == {"lat", "lon"}
    with pytest.raises(ToolRegistrationError, match="local") as refused:
        registry.callback_tool("fast", local=True)
    assert refused.value.rule == "options"


def locate_script(tmp_path: Path) -> str:
    return write_script(
        tmp_path,
        [calls(("c1", "get_location", {"precise": True})), answer("located")],
    )


async def published(run: AgentRun, timeout: float = 15) -> PendingCallback:
    """The run's first published callback call, once there is one."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        found = await pending_callbacks(run.handle)
        if found:
            return found[0]
        assert asyncio.get_running_loop().time() < deadline, "no callback call was published"
        await asyncio.sleep(0.1)


async def tool_message(run: AgentRun, call_id: str) -> Any:
    conversation = await run.handle.query(AgentWorkflow.conversation)
    return next(m for m in conversation if m.role == "tool" and m.tool_call_id == call_id)


async def test_a_client_answers_and_the_model_sees_its_result(
    client: Client, task_queue: str, tmp_path: Path
):
    seen: list[dict[str, Any]] = []

    def get_location(precise: bool) -> Location:  # sync: runs in a thread
        seen.append({"precise": precise})
        return Location(lat=48.85, lon=2.35)

    async with running_worker(client, callback_registry(), task_queue):
        run = await DurableTools(client, task_queue).start(
            "where am I?", model=locate_script(tmp_path)
        )
        pending = await published(run)
        snapshot = await run.status()
        assert [p.call_id for p in snapshot.pending_callbacks] == ["c1"]
        assert pending.tool == "get_location" and pending.arguments == {"precise": True}
        timeline = await run.timeline()
        assert timeline[0].status == "running" and "waiting for a client" in (
            timeline[0].result or ""
        )
        served = await asyncio.wait_for(run.serve_callbacks({"get_location": get_location}), 30)
        result = await run.result()
        assert served == 1
        assert seen == [{"precise": True}]
        assert result.status == RunStatus.COMPLETED
        message = await tool_message(run, "c1")
        assert json.loads(message.content) == {"lat": 48.85, "lon": 2.35}
        assert not message.is_error
        events = [e.event for e in await run.handle.query(AgentWorkflow.events)]
        for name in ("callback.published", "callback.answered", "tool.completed"):
            assert name in events
        completed = next(
            e for e in await run.handle.query(AgentWorkflow.events) if e.event == "tool.completed"
        )
        assert completed.transport == "callback"
        # No activity ran for the callback tool.
        assert "get_location" not in scheduled_activities(await run.handle.fetch_history())
        await assert_not_wedged(run.handle)


async def test_an_output_breaking_the_schema_is_refused_and_a_good_one_accepted(
    client: Client, task_queue: str, tmp_path: Path
):
    async with running_worker(client, callback_registry(), task_queue):
        run = await DurableTools(client, task_queue).start("where?", model=locate_script(tmp_path))
        pending = await published(run)
        with pytest.raises(CallbackRejected) as refused:
            await answer_callback(run.handle, pending, output={"lat": "north"})
        assert refused.value.kind == "CallbackOutputInvalid"
        assert "lat" in refused.value.message
        assert [p.call_id for p in await pending_callbacks(run.handle)] == ["c1"]  # still waits
        reply = await answer_callback(run.handle, pending, output={"lat": 1.0, "lon": 2.0})
        assert reply == "accepted"
        # A second answer for the finished call is refused as already answered.
        with pytest.raises(CallbackRejected) as again:
            await answer_callback(run.handle, pending, output={"lat": 3.0, "lon": 4.0})
        assert again.value.kind == "CallbackAlreadyAnswered"
        assert (await run.result()).status == RunStatus.COMPLETED
        assert json.loads((await tool_message(run, "c1")).content) == {"lat": 1.0, "lon": 2.0}
        await assert_not_wedged(run.handle)


async def test_a_client_error_reaches_the_model(client: Client, task_queue: str, tmp_path: Path):
    def get_location(precise: bool) -> Location:
        raise PermissionError("location access denied by the user")

    async with running_worker(client, callback_registry(), task_queue):
        run = await DurableTools(client, task_queue).start("where?", model=locate_script(tmp_path))
        await asyncio.wait_for(run.serve_callbacks({"get_location": get_location}), 30)
        assert (await run.result()).status == RunStatus.COMPLETED
        message = await tool_message(run, "c1")
        assert message.is_error
        assert "location access denied by the user" in message.content
        await assert_not_wedged(run.handle)


async def test_approval_comes_before_publication(client: Client, task_queue: str, tmp_path: Path):
    async with running_worker(client, callback_registry(approval=True), task_queue):
        run = await DurableTools(client, task_queue).start("where?", model=locate_script(tmp_path))
        snapshot = await wait_for(run, lambda s: bool(s.pending_approvals))
        assert snapshot.pending_callbacks == []
        assert await pending_callbacks(run.handle) == []  # not published before approval
        await run.approve("c1", decider="alice")
        pending = await published(run)
        await answer_callback(run.handle, pending, output={"lat": 0.0, "lon": 0.0})
        assert (await run.result()).status == RunStatus.COMPLETED
        await assert_not_wedged(run.handle)


async def test_a_denied_callback_is_never_published(
    client: Client, task_queue: str, tmp_path: Path
):
    async with running_worker(client, callback_registry(approval=True), task_queue):
        run = await DurableTools(client, task_queue).start("where?", model=locate_script(tmp_path))
        await wait_for(run, lambda s: bool(s.pending_approvals))
        await run.deny("c1", decider="alice", reason="no tracking")
        assert (await run.result()).status == RunStatus.COMPLETED
        events = [e.event for e in await run.handle.query(AgentWorkflow.events)]
        assert "callback.published" not in events
        assert (await tool_message(run, "c1")).is_error
        await assert_not_wedged(run.handle)


async def test_no_answer_before_the_deadline_is_a_timeout_the_model_sees(
    client: Client, task_queue: str, tmp_path: Path
):
    async with running_worker(client, callback_registry(timeout=1.0), task_queue):
        run = await DurableTools(client, task_queue).start("where?", model=locate_script(tmp_path))
        assert (await asyncio.wait_for(run.result(), 30)).status == RunStatus.COMPLETED
        message = await tool_message(run, "c1")
        assert message.is_error
        assert "no client answered" in message.content
        assert "callback.expired" in [e.event for e in await run.handle.query(AgentWorkflow.events)]
        assert (await run.timeline())[0].status == "failed"
        await assert_not_wedged(run.handle)
        history = await run.handle.fetch_history()
    # The UI's timeline names the deadline's timer by what it waits for, not "1s".
    converter = pydantic_data_converter.payload_converter
    summaries = [
        converter.from_payload(event.user_metadata.summary, str)
        for event in history.events
        if event.HasField("timer_started_event_attributes") and event.HasField("user_metadata")
    ]
    assert summaries == ["callback deadline: get_location c1"]


async def test_a_client_restarted_mid_wait_still_answers(
    client: Client, task_queue: str, tmp_path: Path
):
    started = asyncio.Event()
    release = asyncio.Event()
    runs: list[str] = []

    async def slow(precise: bool) -> dict[str, float]:
        runs.append("first")
        started.set()
        await release.wait()  # never set: the first client dies mid-call
        return {"lat": -1.0, "lon": -1.0}

    async def fast(precise: bool) -> dict[str, float]:
        runs.append("second")
        return {"lat": 5.0, "lon": 6.0}

    async with running_worker(client, callback_registry(), task_queue):
        run = await DurableTools(client, task_queue).start("where?", model=locate_script(tmp_path))
        first = asyncio.create_task(run.serve_callbacks({"get_location": slow}, poll_interval=0.1))
        await asyncio.wait_for(started.wait(), 15)
        first.cancel()  # the client process goes away mid-call
        with pytest.raises(asyncio.CancelledError):
            await first
        assert [p.call_id for p in await pending_callbacks(run.handle)] == ["c1"]
        again = DurableTools(client, task_queue).run(run.run_id)
        assert await asyncio.wait_for(again.serve_callbacks({"get_location": fast}), 30) == 1
        assert runs == ["first", "second"]
        assert json.loads((await tool_message(run, "c1")).content) == {"lat": 5.0, "lon": 6.0}
        await assert_not_wedged(run.handle)


async def test_the_run_waits_through_a_worker_restart(
    client: Client, task_queue: str, tmp_path: Path
):
    model = locate_script(tmp_path)
    async with running_worker(client, callback_registry(), task_queue, max_cached_workflows=0):
        run = await DurableTools(client, task_queue).start("where?", model=model)
        pending = await published(run)
    # No worker now: the run waits in history. A new worker answers from history alone.
    async with running_worker(client, callback_registry(), task_queue, max_cached_workflows=0):
        assert await answer_callback(run.handle, pending, output={"lat": 7.0, "lon": 8.0}) == (
            "accepted"
        )
        assert (await run.result()).status == RunStatus.COMPLETED
        await assert_not_wedged(run.handle)


async def test_hostile_answers_are_refused_and_never_wedge_the_run(
    client: Client, task_queue: str, tmp_path: Path
):
    async with running_worker(client, callback_registry(), task_queue):
        run = await DurableTools(client, task_queue).start("where?", model=locate_script(tmp_path))
        pending = await published(run)
        good = {"call_id": "c1", "request_hash": pending.request_hash}
        deep: Any = {"lat": 1.0, "lon": 2.0}
        for _ in range(400):
            deep = {"x": deep}
        hostile: list[tuple[Any, str]] = [
            (None, "got NoneType"),
            ("c1", "got str"),
            (17, "got int"),
            ([good], "got list"),
            ({}, "at call_id: Field required"),
            ({"call_id": None, "request_hash": pending.request_hash}, "at call_id"),
            ({"call_id": 5, "request_hash": pending.request_hash, "output": {}}, "at call_id"),
            ({**good, "output": {"lat": 1.0, "lon": 2.0}, "extra": True}, "at extra"),
            ({**good, "error": 42}, "at error"),
            ({**good, "error": "x" * 100_000}, "at most 8000 characters"),
            (
                {"call_id": "nope", "request_hash": pending.request_hash, "output": {}},
                "no callback call 'nope'",
            ),
            (
                {"call_id": "c1" * 1000, "request_hash": pending.request_hash, "output": {}},
                "at most 256 characters",
            ),
            (
                {"call_id": "c1", "request_hash": "0" * 64, "output": {"lat": 1.0, "lon": 2.0}},
                "request_hash does not match",
            ),
            (
                {**good, "output": {"lat": 1.0, "lon": 2.0, "blob": "y" * 1_200_000}},
                "over the 1000000-byte limit",
            ),
            ({**good, "output": {"lat": 1.0}}, "breaks the output schema"),
        ]
        for body, why in hostile:
            with pytest.raises(WorkflowUpdateFailedError) as refused:
                await run.handle.execute_update("callback_result", body, result_type=str)
            assert why in str(refused.value.cause)
        # Nested deeper than the run's converter decodes, from a client whose converter
        # (plain JSON) writes it: the SDK refuses the update's argument.
        plain = Client(client.service_client, namespace=client.namespace)
        with pytest.raises(WorkflowUpdateFailedError):
            await plain.get_workflow_handle(run.run_id).execute_update(
                "callback_result", {**good, "output": deep}, result_type=str
            )
        # About 2 MB on the wire.
        with pytest.raises(WorkflowUpdateFailedError):
            await run.handle.execute_update(
                "callback_result", {**good, "output": {"blob": "z" * 2_000_000}}, result_type=str
            )
        assert [p.call_id for p in await pending_callbacks(run.handle)] == ["c1"]
        assert await answer_callback(run.handle, pending, output={"lat": 1.0, "lon": 2.0}) == (
            "accepted"
        )
        assert (await run.result()).status == RunStatus.COMPLETED
        await assert_not_wedged(run.handle, allowed=0)


async def test_a_handler_result_over_the_limit_becomes_an_error(
    client: Client, task_queue: str, tmp_path: Path
):
    registry = ToolRegistry()
    registry.callback_tool("dump", description="Dump everything.")
    model = write_script(tmp_path, [calls(("d1", "dump", {})), answer("done")])

    def dump() -> str:
        return "q" * 1_500_000

    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("dump", model=model)
        await asyncio.wait_for(serve_callbacks(run.handle, {"dump": dump}), 30)
        message = await tool_message(run, "d1")
        assert message.is_error and "over the" in message.content
        await assert_not_wedged(run.handle, allowed=0)


async def test_a_large_accepted_output_goes_to_the_artifact_store(
    client: Client, task_queue: str, tmp_path: Path
):
    registry = ToolRegistry()
    registry.callback_tool("dump", description="Dump everything.")
    model = write_script(tmp_path, [calls(("d1", "dump", {})), answer("done")])
    store = FileSystemArtifactStore(tmp_path / "artifacts")
    secret = "sk-callback-secret-123"
    big = "q" * 900_000 + f" token={secret}"

    async with running_worker(
        client, registry, task_queue, artifact_store=store, secrets={"api": secret}
    ):
        run = await DurableTools(client, task_queue).start("dump", model=model)
        await asyncio.wait_for(serve_callbacks(run.handle, {"dump": lambda: big}), 30)
        message = await tool_message(run, "d1")
        assert not message.is_error
        assert len(message.content.encode()) <= 16_000  # the run's output limit
        assert "output truncated" in message.content
        record = (await run.timeline())[0]
        assert len(record.artifacts) == 1
        stored = store.get(record.artifacts[0]).decode()
        assert stored.startswith("q" * 1000) and len(stored) > 900_000
        assert secret not in stored  # scrubbed on the worker, as a tool's output is
        assert "durable_tools.callback_result" in scheduled_activities(
            await run.handle.fetch_history()
        )
        await assert_not_wedged(run.handle, allowed=0)


async def test_serve_callbacks_turns_a_refused_result_into_the_tools_error(
    client: Client, task_queue: str, tmp_path: Path
):
    said: list[str] = []
    async with running_worker(client, callback_registry(), task_queue):
        run = await DurableTools(client, task_queue).start("where?", model=locate_script(tmp_path))
        await asyncio.wait_for(
            serve_callbacks(
                run.handle,
                {"get_location": lambda precise: {"lat": "north"}},
                on_answer=lambda pending, outcome: said.append(outcome),
            ),
            30,
        )
        message = await tool_message(run, "c1")
        assert message.is_error
        assert "breaks the output schema" in message.content
        assert len(said) == 1 and said[0].startswith("refused: ")
        await assert_not_wedged(run.handle, allowed=0)


async def test_cancelling_the_run_stops_the_wait_and_refuses_a_late_answer(
    client: Client, task_queue: str, tmp_path: Path
):
    async with running_worker(client, callback_registry(), task_queue):
        run = await DurableTools(client, task_queue).start("where?", model=locate_script(tmp_path))
        pending = await published(run)
        await run.cancel("user left")
        assert (await run.result()).status == RunStatus.CANCELLED
        assert (await run.timeline())[0].status == "cancelled"
        with pytest.raises(CallbackRejected) as late:
            await answer_callback(run.handle, pending, output={"lat": 1.0, "lon": 2.0})
        assert late.value.kind == "RunEnded"
        await assert_not_wedged(run.handle, allowed=0)


async def test_a_skip_steer_leaves_a_published_call_to_finish(
    client: Client, task_queue: str, tmp_path: Path
):
    model = write_script(
        tmp_path,
        [
            calls(
                ("c1", "get_location", {"precise": True}),
                ("c2", "get_location", {"precise": False}),
            ),
            answer("done"),
        ],
    )
    async with running_worker(client, callback_registry(), task_queue):
        run = await DurableTools(client, task_queue).start("where?", model=model)
        pending = await published(run)  # sequential: c1 is published, c2 not yet started
        await run.steer("stop locating", skip_remaining=True)
        for _ in range(100):  # the steer has reached the run
            if "run.steered" in [e.event for e in await run.handle.query(AgentWorkflow.events)]:
                break
            await asyncio.sleep(0.1)
        assert [p.call_id for p in await pending_callbacks(run.handle)] == ["c1"]
        assert await answer_callback(run.handle, pending, output={"lat": 1.0, "lon": 2.0}) == (
            "accepted"
        )
        assert (await run.result()).status == RunStatus.COMPLETED
        assert json.loads((await tool_message(run, "c1")).content) == {"lat": 1.0, "lon": 2.0}
        assert "skipped: the user steered" in (await tool_message(run, "c2")).content
        await assert_not_wedged(run.handle, allowed=0)
