"""Sessions on a real dev server: a run that, after each answer, waits durably for the
next user message; update-with-start; close and idle timeout; approvals, steering and
continue-as-new inside a session; every refusal the message handler makes."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowUpdateFailedError
from temporalio.common import RawValue

from durable_tools import (
    AgentConfig,
    AgentRun,
    DurableTools,
    Limits,
    RunStatus,
    SessionConfig,
    SessionRefused,
    ToolRegistry,
    search_attributes as sa,
)
from durable_tools.protocol._limits import MAX_MESSAGE_CHARS
from support import (
    answer,
    assert_not_wedged,
    assert_replays,
    calls,
    running_worker,
    wait_for,
    write_script,
)

LONE = b'"\\ud800 x"'
"""A JSON string holding a lone surrogate (no UTF-8 encoding exists for it)."""


def registry(ran: list[str]) -> ToolRegistry:
    tools = ToolRegistry()

    @tools.tool(read_only=True)
    def lookup(q: str) -> str:
        """Look something up."""
        ran.append(f"lookup {q}")
        return f"found {q}"

    @tools.tool(approval=True, idempotent=True)
    def pay(amount_cents: int) -> str:
        """Pay an amount (needs approval)."""
        ran.append(f"pay {amount_cents}")
        return f"paid {amount_cents}"

    return tools


def session_config(model: str, **options: Any) -> AgentConfig:
    return AgentConfig(model=model, session=SessionConfig(**options.pop("session", {})), **options)


async def awaiting_message(run: AgentRun) -> None:
    await wait_for(run, lambda s: s.status == RunStatus.AWAITING_MESSAGE)


def texts(messages: list[Any], role: str) -> list[str]:
    return [m.content for m in messages if m.role == role and m.content]


async def test_a_session_answers_each_message_then_closes(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    ran: list[str] = []
    model = write_script(
        tmp_path,
        [
            answer("hello"),  # message 1: the start prompt
            calls(("c1", "lookup", {"q": "x"})),  # message 2 uses a tool
            answer("x is found"),
            answer("bye"),  # message 3
        ],
    )
    tools = DurableTools(client, task_queue)
    async with running_worker(client, registry(ran), task_queue):
        run = await tools.start("hi", config=session_config(model))
        await awaiting_message(run)
        described = await run.handle.describe()
        assert described.status == WorkflowExecutionStatus.RUNNING
        await wait_for_attribute(run, RunStatus.AWAITING_MESSAGE.value)
        reply = await run.send("look up x")
        assert (reply.message, reply.answer, reply.status) == (2, "x is found", "awaiting_message")
        assert (reply.turns, reply.tool_calls) == (2, 1)
        assert (await run.send("thanks")).answer == "bye"
        snapshot = await run.status()
        assert snapshot.session is not None and snapshot.session.messages == 3
        assert snapshot.session.idle_deadline is not None
        assert "waiting for the next message" in (await current_details(run))
        assert await run.close("done here") == "closed"
        result = await run.result()
        conversation = await run.conversation()
        events = [e.event for e in await run.events()]
        timeline = await run.timeline()
    assert result.status == RunStatus.COMPLETED
    assert result.reason == "session closed: done here"
    assert result.final_answer == "bye" and result.turns == 4
    assert texts(conversation, "user") == ["hi", "look up x", "thanks"]
    assert texts(conversation, "assistant") == ["hello", "x is found", "bye"]
    assert events.count("session.message") == 3 and events.count("session.answered") == 3
    assert events[-3:] == ["session.close_requested", "session.closed", "run.completed"]
    assert [r.call_id for r in timeline] == ["c1"] and ran == ["lookup x"]


async def wait_for_attribute(run: AgentRun, status: str) -> None:
    """Poll the run's `AgentStatus` search attribute (upserts land asynchronously)."""
    for _ in range(150):
        described = await run.handle.describe()
        if described.typed_search_attributes.get(sa.AGENT_STATUS) == status:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"AgentStatus never became {status}")


async def current_details(run: AgentRun) -> str:
    """The UI's current details (the workflow's metadata query)."""
    metadata = await run.handle.query("__temporal_workflow_metadata")
    details: str = metadata.current_details
    return details


async def test_update_with_start_one_call_per_message(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    model = write_script(tmp_path, [answer("one"), answer("two")])
    tools = DurableTools(client, task_queue)
    session_id = f"chat-{uuid.uuid4().hex[:8]}"
    config = AgentConfig(model=model, session=SessionConfig(idle_timeout_seconds=3600))
    async with running_worker(client, ToolRegistry(), task_queue):
        first = await tools.send(session_id, "first", config=config)
        second = await tools.send(session_id, "second", config=config)
        run = tools.run(session_id)
        conversation = await run.conversation()
        pending = await wait_pending(tools, session_id)
        await run.close()
        await run.result()
        with pytest.raises(SessionRefused, match="has ended"):
            await tools.send(session_id, "third", config=config)
        history = await run.handle.fetch_history()
    assert (first.message, first.answer) == (1, "one")
    assert (second.message, second.answer) == (2, "two")
    assert texts(conversation, "user") == ["first", "second"]  # no empty start prompt
    assert pending.status == RunStatus.AWAITING_MESSAGE.value
    await assert_replays(history)


async def wait_pending(tools: DurableTools, run_id: str) -> Any:
    """The run's line in `pending()` (visibility is eventually consistent: poll)."""
    for _ in range(150):
        found = [r for r in await tools.pending() if r.run_id == run_id]
        if found:
            return found[0]
        await asyncio.sleep(0.1)
    raise AssertionError(f"{run_id} never listed as pending")


async def test_approval_inside_the_second_message_turn(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    ran: list[str] = []
    model = write_script(
        tmp_path,
        [
            answer("ready"),
            calls(("p1", "pay", {"amount_cents": 500})),
            answer("paid"),
            calls(("p2", "pay", {"amount_cents": 9})),
            answer("not paid"),
        ],
    )
    tools = DurableTools(client, task_queue)
    async with running_worker(client, registry(ran), task_queue, max_cached_workflows=0):
        run = await tools.start("hi", config=session_config(model))
        await awaiting_message(run)
        sent = await run.start_send("pay 5")
        waiting = await wait_for(run, lambda s: bool(s.pending_approvals))
        assert waiting.status == RunStatus.AWAITING_APPROVAL
        approval = waiting.pending_approvals[0]
        await run.approve("p1", arguments_hash=approval.arguments_hash, decider="ada")
        reply = await sent.result()
        # The same message waited for elsewhere, by its id.
        again = await run.message(sent.id, workflow_run_id=sent.workflow_run_id).result()
        third = await run.start_send("pay 9 cents")
        waiting = await wait_for(run, lambda s: bool(s.pending_approvals))
        pending = waiting.pending_approvals[0]
        await run.deny("p2", arguments_hash=pending.arguments_hash, reason="no")
        denied = await third.result()
        timeline = await run.timeline()
        await run.close()
        await run.result()
    assert reply.answer == "paid" and again == reply
    assert denied.answer == "not paid"
    assert ran == ["pay 500"]
    assert [(r.call_id, r.status, r.decided_by) for r in timeline] == [
        ("p1", "completed", "ada"),
        ("p2", "denied", "anonymous"),
    ]
    await assert_not_wedged(run.handle, allowed=0)


async def test_steering_a_session_turn_and_limits_count_per_message(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    gate = asyncio.Event()
    started = asyncio.Event()
    tools_registry = ToolRegistry()

    @tools_registry.tool(read_only=True)
    async def slow(n: int) -> str:
        """Answers when the test lets it."""
        started.set()
        await gate.wait()
        return f"slow {n}"

    # max_turns=2 a message: three messages of two turns each fit in one session.
    steps: list[dict[str, Any]] = [answer("ready")]
    for n in range(3):
        steps += [calls((f"s{n}", "slow", {"n": n})), answer(f"done {n}")]
    model = write_script(tmp_path, steps)
    config = session_config(model, limits=Limits(max_turns=2, max_tool_calls=1))
    tools = DurableTools(client, task_queue)
    async with running_worker(client, tools_registry, task_queue):
        run = await tools.start("hi", config=config)
        await awaiting_message(run)
        sent = await run.start_send("work 0")
        await started.wait()
        await run.steer("also say hi")
        await wait_for_event(run, "run.steered")
        gate.set()
        replies = [await sent.result(), await run.send("work 1"), await run.send("work 2")]
        conversation = await run.conversation()
        await run.close()
        result = await run.result()
    assert [r.answer for r in replies] == ["done 0", "done 1", "done 2"]
    assert "also say hi" in texts(conversation, "user")
    assert result.status == RunStatus.COMPLETED and result.turns == 7


async def wait_for_event(run: AgentRun, name: str) -> None:
    for _ in range(150):
        if any(e.event == name for e in await run.events()):
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"no {name} event")


async def test_idle_timeout_ends_the_session(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    model = write_script(tmp_path, [answer("hello")])
    config = session_config(model, session={"idle_timeout_seconds": 1})
    tools = DurableTools(client, task_queue)
    async with running_worker(client, ToolRegistry(), task_queue):
        run = await tools.start("hi", config=config)
        result = await run.result()
        events = [e.event for e in await run.events()]
    assert result.status == RunStatus.COMPLETED
    assert result.reason == "session closed: no message for 1 s (idle_timeout_seconds)"
    assert result.final_answer == "hello"
    assert events[-2:] == ["session.closed", "run.completed"]


async def test_continues_as_new_while_idle_and_keeps_everything(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    model = write_script(tmp_path, [answer(f"answer {n}") for n in range(8)])
    config = session_config(model, continue_as_new_after_events=20)
    tools = DurableTools(client, task_queue)
    async with running_worker(client, ToolRegistry(), task_queue, max_cached_workflows=0):
        run = await tools.start("message 0", config=config)
        await awaiting_message(run)
        deadline = (await run.status()).session.idle_deadline  # type: ignore[union-attr]
        replies = [await run.send(f"message {n}") for n in range(1, 8)]
        snapshot = await run.status()
        conversation = await run.conversation()
        await run.close()
        result = await run.result()
    assert [r.answer for r in replies] == [f"answer {n}" for n in range(1, 8)]
    assert snapshot.continued >= 2, "the session never continued-as-new"
    assert snapshot.session is not None and snapshot.session.messages == 8
    assert deadline is not None and snapshot.session.idle_deadline is not None
    assert texts(conversation, "user") == [f"message {n}" for n in range(8)]
    assert texts(conversation, "assistant") == [f"answer {n}" for n in range(8)]
    assert result.final_answer == "answer 7"


async def test_the_idle_deadline_survives_continue_as_new(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # Continue-as-new happens at the start of each wait: the next run must wait until
    # the deadline the previous one set, not a fresh idle period.
    model = write_script(tmp_path, [answer("a"), answer("b")])
    config = session_config(model, continue_as_new_after_events=20)
    tools = DurableTools(client, task_queue)
    async with running_worker(client, ToolRegistry(), task_queue):
        run = await tools.start("hi", config=config)
        await awaiting_message(run)
        await run.send("again")
        first = await wait_for(run, lambda s: s.continued >= 1)
        assert first.session is not None and first.session.idle_deadline is not None
        before = first.session.idle_deadline
        again = await run.status()
        await run.close()
    assert again.session is not None and again.session.idle_deadline == before


async def test_refusals(client: Client, task_queue: str, tmp_path: Path) -> None:
    gate = asyncio.Event()
    tools_registry = ToolRegistry()

    @tools_registry.tool(read_only=True)
    async def slow(n: int) -> str:
        """Answers when the test lets it."""
        await gate.wait()
        return f"slow {n}"

    model = write_script(tmp_path, [answer("ready"), calls(("s", "slow", {"n": 1})), answer("ok")])
    plain = write_script(tmp_path, [calls(("s", "slow", {"n": 1})), answer("ok")])
    tools = DurableTools(client, task_queue)
    async with running_worker(client, tools_registry, task_queue):
        not_session = await tools.start("hi", config=AgentConfig(model=plain))
        with pytest.raises(SessionRefused, match="is not a session"):
            await not_session.send("hello")
        with pytest.raises(SessionRefused, match="is not a session"):
            await not_session.close()
        run = await tools.start("hi", config=session_config(model))
        await awaiting_message(run)
        # What the client checks first, the run checks too (a raw update skips the client).
        for bad, why in [
            ("   ", "non-empty"),
            ("x" * (MAX_MESSAGE_CHARS + 1), "the limit is"),
            (42, "must be text"),
            ({"text": "hi"}, "must be text"),
            # A lone surrogate: the converter refuses it before the handler sees it.
            (RawValue(Payload(metadata={"encoding": b"json/plain"}, data=LONE)), "Invalid JSON"),
        ]:
            with pytest.raises(WorkflowUpdateFailedError) as refused:
                await run.handle.execute_update("send_message", bad, result_type=dict)
            assert why in str(refused.value.cause), (bad, refused.value.cause)
        with pytest.raises(SessionRefused, match="the limit is"):
            await run.send("x" * (MAX_MESSAGE_CHARS + 1))
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await run.handle.execute_update("close", 7, result_type=str)
        assert "must be text" in str(refused.value.cause)
        with pytest.raises(SessionRefused, match="the limit is 500"):
            await run.close("x" * 1_000_000)
        sent = await run.start_send("work")
        with pytest.raises(SessionRefused, match="answering message 2"):
            await run.send("and more")
        assert (await run.close("bye")).startswith("closing after the answer to message 2")
        with pytest.raises(SessionRefused, match="closing"):
            await run.close()
        gate.set()
        reply = await sent.result()
        result = await run.result()
        await not_session.result()
        history = await run.handle.fetch_history()
    assert reply.answer == "ok" and reply.status == "completed"
    assert result.reason == "session closed: bye"
    # Nothing refused entered history: one accepted message update, one close.
    accepted = [
        e.workflow_execution_update_accepted_event_attributes.accepted_request.input.name
        for e in history.events
        if e.HasField("workflow_execution_update_accepted_event_attributes")
    ]
    assert accepted == ["send_message", "close"]
    await assert_not_wedged(run.handle, allowed=0)


async def test_two_messages_at_once_one_is_refused(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    model = write_script(tmp_path, [answer("one"), answer("two")])
    tools = DurableTools(client, task_queue)
    async with running_worker(client, ToolRegistry(), task_queue):
        run = await tools.start("", config=session_config(model))
        outcomes = await asyncio.gather(
            *(run.send(f"m{n}") for n in range(5)), return_exceptions=True
        )
        await run.close()
        await run.result()
    answered = [o for o in outcomes if not isinstance(o, BaseException)]
    refused = [o for o in outcomes if isinstance(o, SessionRefused)]
    assert len(answered) + len(refused) == 5, outcomes
    assert [r.message for r in answered] == list(range(1, len(answered) + 1))
    await assert_not_wedged(run.handle, allowed=0)


async def test_cancel_while_idle_and_a_limit_inside_a_message(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    model = write_script(
        tmp_path,
        [answer("ready"), calls(("a", "lookup", {"q": "1"})), calls(("b", "lookup", {"q": "2"}))],
    )
    config = session_config(model, limits=Limits(max_turns=1))
    tools = DurableTools(client, task_queue)
    async with running_worker(client, registry([]), task_queue):
        idle = await tools.start("hi", config=session_config(write_script(tmp_path, [answer("x")])))
        await awaiting_message(idle)
        await idle.cancel("stop")
        cancelled = await idle.result()
        run = await tools.start("hi", config=config)
        await awaiting_message(run)
        reply = await run.send("use tools")
        result = await run.result()
    assert (cancelled.status, cancelled.reason) == (RunStatus.CANCELLED, "stop")
    assert reply.status == RunStatus.LIMIT_REACHED.value
    assert reply.reason is not None and "max_turns (1)" in reply.reason
    assert result.status == RunStatus.LIMIT_REACHED


async def test_a_callback_tool_runs_inside_a_session_turn(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # A callback tool's call is published in the second message's turn, a client answers
    # it, and the session answers that message and waits for the next one.
    tools_ = registry([])
    tools_.callback_tool(
        "get_location",
        description="Where the user's device is.",
        parameters={"type": "object", "properties": {"precise": {"type": "boolean"}}},
        timeout=60,
    )
    model = write_script(
        tmp_path,
        [
            answer("ready"),
            calls(("g1", "get_location", {"precise": True})),
            answer("you are in Lyon"),
        ],
    )
    located: list[bool] = []

    def get_location(precise: bool) -> dict[str, float]:
        located.append(precise)
        return {"lat": 45.76, "lon": 4.84}

    tools = DurableTools(client, task_queue)
    async with running_worker(client, tools_, task_queue):
        run = await tools.start("hi", config=session_config(model))
        await awaiting_message(run)
        sent = await run.start_send("where am I?")
        await wait_for(run, lambda s: bool(s.pending_callbacks))
        serving = asyncio.ensure_future(run.serve_callbacks({"get_location": get_location}))
        reply = await asyncio.wait_for(sent.result(), 30)
        await awaiting_message(run)
        await run.close()
        await run.result()
        await asyncio.wait_for(serving, 30)
    assert reply.answer == "you are in Lyon"
    assert located == [True]


async def test_a_message_id_reused_for_other_text_is_refused_not_answered_with_the_old_reply(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # Temporal takes an update id once per run: a second update under the same id gets
    # the first one's outcome, and the workflow never sees it. A front end that reused
    # an id (its own message ids, say) once got the answer to the old question for the
    # new one, and the new one was dropped without a word.
    model = write_script(tmp_path, [answer("one"), answer("two")])
    tools = DurableTools(client, task_queue)
    async with running_worker(client, ToolRegistry(), task_queue):
        run = await tools.start("", config=session_config(model))
        await awaiting_message(run)
        first = await run.send("what is 1", message_id="m-1")
        retried = await run.send("what is 1", message_id="m-1")  # a retry: same text
        with pytest.raises(SessionRefused, match=r"m-1.*other text"):
            await run.send("what is 2", message_id="m-1")
        with pytest.raises(SessionRefused, match=r"m-1.*other text"):
            await (await run.start_send("what is 2", message_id="m-1")).result()
        with pytest.raises(SessionRefused, match=r"m-1.*other text"):
            await tools.send(
                run.run_id, "what is 2", config=session_config(model), message_id="m-1"
            )
        second = await run.send("what is 2", message_id="m-2")
        await run.close()
    assert (first.message, first.answer) == (1, "one")
    assert retried == first
    assert (second.message, second.answer) == (2, "two")
