"""How one AG-UI run follows its message on a real dev server: the model's text streams as
the provider writes it (a real OpenAI-wire server holds its answer open mid-way), an
approval only someone else may decide shows as waiting while the stream goes on until the
inbox's decide path decides it, and a message sent again under its id is answered once."""

from __future__ import annotations

import asyncio
import threading
import uuid
from pathlib import Path
from typing import Any

from agui_support import chat, of_type, run_input, user
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from durable_tools import AgentRun, ApprovalPolicy, DurableTools, SessionReply
from durable_tools.agui import session_id
from fake_openai import CannedResponse, FakeOpenAIServer, chat_stream
from support import answer, calls, wait_for


async def test_the_answer_streams_while_the_model_still_writes_it(
    client: Client, task_queue: str, tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    hold = threading.Event()
    stream = chat_stream(["Hel", "lo ", "there"])
    stream.insert(2, hold)  # after "Hel": the provider stops sending until released
    openai_server.add(CannedResponse(sse=stream))
    thread = f"t-{uuid.uuid4().hex[:8]}"
    seen: list[dict[str, Any]] = []
    try:
        async with (
            chat(client, task_queue, tmp_path, [], agent={"model": "openai:gpt-t"}) as endpoint,
            endpoint.stream(endpoint.alice, run_input(thread, [user("hi")])) as events,
        ):
            async for event in events:
                seen.append(event)
                if event["type"] == "TEXT_MESSAGE_CONTENT" and not hold.is_set():
                    # The first piece arrived while the model call is still open.
                    assert event["delta"] == "Hel"
                    hold.set()
    finally:
        hold.set()
    deltas = [e["delta"] for e in of_type(seen, "TEXT_MESSAGE_CONTENT")]
    assert "".join(deltas) == "Hello there" and len(deltas) >= 2
    ids = {e["messageId"] for e in seen if e["type"].startswith("TEXT_MESSAGE")}
    assert len(ids) == 1  # one message, not the streamed one and the answer again
    assert seen[-1]["type"] == "RUN_FINISHED" and seen[-1]["result"]["answer"] == "Hello there"


async def test_an_approval_for_someone_else_waits_and_the_stream_goes_on(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    script = [calls(("c1", "pay", {"amount_cents": 900})), answer("bob approved it")]
    thread = f"t-{uuid.uuid4().hex[:8]}"
    policy = ApprovalPolicy(deciders=["bob"])
    async with chat(
        client, task_queue, tmp_path, script, agent={"approval": policy}, keepalive_seconds=0.05
    ) as endpoint:
        session = DurableTools(client).run(session_id("agui", "alice", thread))
        seen: list[dict[str, Any]] = []

        async def bob_decides_in_the_inbox() -> None:
            snapshot = await wait_for(session, lambda s: bool(s.pending_approvals))
            (approval,) = snapshot.pending_approvals
            await session.decide_request(
                approval.call_id, True, arguments_hash=approval.arguments_hash, decider="bob"
            )

        async with endpoint.stream(endpoint.alice, run_input(thread, [user("pay")])) as events:
            async for event in events:
                seen.append(event)
                waiting = event.get("snapshot", {}).get("waiting", [])
                if waiting and waiting[0]["decidedBy"] == "others":
                    await asyncio.sleep(0.5)  # quiet while it waits: keep-alives flow
                    await bob_decides_in_the_inbox()
    states = [e["snapshot"]["waiting"] for e in of_type(seen, "STATE_SNAPSHOT")]
    assert any(w and w[0]["deciders"] == ["bob"] for w in states)
    assert [e["content"] for e in of_type(seen, "TOOL_CALL_RESULT")] == ["paid 900"]
    assert seen[-1]["type"] == "RUN_FINISHED" and "outcome" not in seen[-1]
    assert seen[-1]["result"]["answer"] == "bob approved it"
    assert endpoint.ran == ["pay 900"]
    assert endpoint.comments > 0  # the quiet stream said it is alive


async def started(run: AgentRun) -> None:
    """Wait until the run exists (its start may still be on its way)."""
    for _ in range(300):
        try:
            await run.handle.describe()
            return
        except RPCError as error:
            if error.status != RPCStatusCode.NOT_FOUND:
                raise
        await asyncio.sleep(0.1)
    raise AssertionError(f"run {run.run_id} was never started")


async def test_a_message_sent_again_after_a_lost_connection_is_answered_once(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    script = [calls(("c1", "lookup", {"q": "y"})), answer("y is found")]
    thread = f"t-{uuid.uuid4().hex[:8]}"
    message = user("look up y")
    async with chat(client, task_queue, tmp_path, script) as endpoint:
        async with endpoint.stream(endpoint.alice, run_input(thread, [message])) as events:
            async for event in events:
                if event["type"] == "RUN_STARTED":
                    break  # the tab closed: the connection drops mid-run
        session = DurableTools(client).run(session_id("agui", "alice", thread))
        # The send the request started goes on without it: the session takes the message.
        await started(session)
        snapshot = await wait_for(session, lambda s: bool(s.session and s.session.messages))
        assert snapshot.session is not None and snapshot.session.messages == 1
        reply = await asyncio.wait_for(session.message("agui-" + message["id"]).result(), 60)
        assert isinstance(reply, SessionReply) and reply.answer == "y is found"
        again = await endpoint.run(endpoint.alice, run_input(thread, [message]))
        assert (await session.status()).session.messages == 1  # type: ignore[union-attr]
    assert again[-1]["type"] == "RUN_FINISHED"
    assert again[-1]["result"]["answer"] == "y is found"
    assert "".join(e["delta"] for e in of_type(again, "TEXT_MESSAGE_CONTENT")) == "y is found"
    assert endpoint.ran == ["lookup y"]
