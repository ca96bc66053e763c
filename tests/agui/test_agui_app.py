"""The AG-UI endpoint against a real dev server and worker: a thread is a session; text, tool
calls with their results and steps stream as AG-UI events; an approval the user may decide
ends the AG-UI run with an interrupt that the next input's resume decides, once."""

from __future__ import annotations

import uuid
from pathlib import Path

from agui_support import chat, of_type, run_input, types, user
from temporalio.client import Client

from durable_tools import DurableTools, RunStatus
from durable_tools.agui import session_id
from support import answer, calls, wait_for


def approve(interrupt_id: str) -> dict[str, object]:
    return {"interruptId": interrupt_id, "status": "resolved", "payload": {"approved": True}}


def steps() -> list[dict[str, object]]:
    return [
        calls(("c1", "lookup", {"q": "x"})),  # message 1
        answer("x is found"),
        calls(("c2", "pay", {"amount_cents": 500, "card": "4242424242424242"})),  # message 2
        answer("paid it"),
    ]


async def test_a_conversation_streams_tools_and_asks_for_approval(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    thread = f"t-{uuid.uuid4().hex[:8]}"
    first, second = user("look up x"), user("pay 5 dollars")
    async with chat(client, task_queue, tmp_path, steps()) as endpoint:
        one = await endpoint.run(endpoint.alice, run_input(thread, [first]))
        assert types(one)[0] == "RUN_STARTED" and types(one)[-1] == "RUN_FINISHED"
        start = of_type(one, "TOOL_CALL_START")
        assert [(e["toolCallId"], e["toolCallName"]) for e in start] == [("c1", "lookup")]
        assert of_type(one, "TOOL_CALL_ARGS")[0]["delta"] == 'q="x"'
        assert [e["content"] for e in of_type(one, "TOOL_CALL_RESULT")] == ["found x"]
        assert "".join(e["delta"] for e in of_type(one, "TEXT_MESSAGE_CONTENT")) == "x is found"
        steps_seen = [e["stepName"] for e in of_type(one, "STEP_STARTED")]
        assert steps_seen == ["turn 1", "turn 2"]
        assert len(of_type(one, "STEP_FINISHED")) == 2
        assert one[-1]["result"]["answer"] == "x is found"
        assert "outcome" not in one[-1]

        # The second message of the thread asks to pay: the run ends on an interrupt.
        history = [first, {"id": "a1", "role": "assistant", "content": "x is found"}, second]
        two = await endpoint.run(endpoint.alice, run_input(thread, history))
        finished = two[-1]
        assert finished["type"] == "RUN_FINISHED"
        assert finished["outcome"]["type"] == "interrupt"
        (interrupt,) = finished["outcome"]["interrupts"]
        assert interrupt["toolCallId"] == "c2" and interrupt["reason"] == "tool_approval"
        metadata = interrupt["metadata"]
        assert metadata["tool"] == "pay"
        assert metadata["arguments"] == {"amount_cents": 500, "card": "[redacted]"}
        assert interrupt["id"] == f"approval:c2:{metadata['argumentsHash']}"
        assert "4242424242424242" not in str(two)
        states = of_type(two, "STATE_SNAPSHOT")
        assert states[-1]["snapshot"]["waiting"][0]["decidedBy"] == "you"
        assert endpoint.ran == ["lookup x"]

        # The resume approves it: the tool runs once and the answer streams.
        resume = [approve(interrupt["id"])]
        three = await endpoint.run(endpoint.alice, run_input(thread, history, resume))
        assert [e["content"] for e in of_type(three, "TOOL_CALL_RESULT")] == ["paid 500"]
        assert "".join(e["delta"] for e in of_type(three, "TEXT_MESSAGE_CONTENT")) == "paid it"
        assert three[-1]["type"] == "RUN_FINISHED" and "outcome" not in three[-1]

        # The same resume again (a client retry): decided once, the tool ran once.
        again = await endpoint.run(endpoint.alice, run_input(thread, history, resume))
        assert again[-1]["type"] == "RUN_FINISHED"
        assert endpoint.ran == ["lookup x", "pay 500"]

        session = DurableTools(client, task_queue).run(session_id("agui", "alice", thread))
        timeline = await session.timeline()
        assert [(r.call_id, r.status, r.decided_by) for r in timeline] == [
            ("c1", "completed", None),
            ("c2", "completed", "alice"),
        ]
        await session.close("test over")


async def test_another_user_cannot_reach_a_thread_or_resume_its_interrupt(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    thread = f"t-{uuid.uuid4().hex[:8]}"
    script = [calls(("c2", "pay", {"amount_cents": 500})), answer("bob's answer")]
    async with chat(client, task_queue, tmp_path, script) as endpoint:
        asked = user("pay 5 dollars")
        interrupt = await endpoint.interrupted(thread, asked)
        resume = [approve(interrupt["id"])]

        # Bob names alice's thread: it does not exist for him (nothing says it does).
        refused = await endpoint.post(endpoint.bob, run_input(thread, [asked], resume))
        assert refused.status_code == 404
        assert "no thread" in refused.json()["error"]
        missing = await endpoint.post(endpoint.bob, run_input("t-never-used", [asked], resume))
        assert (missing.status_code, missing.json()) == (
            refused.status_code,
            {"error": refused.json()["error"].replace(thread, "t-never-used")},
        )

        # Nor can he read it: the same 404 as for a thread nobody has.
        read = await endpoint.thread(endpoint.bob, thread)
        assert read.status_code == 404 and thread in read.json()["error"]
        mine = await endpoint.thread(endpoint.alice, thread)
        assert mine.json()["messages"] == [
            {"id": "m-0", "role": "user", "content": "pay 5 dollars"}
        ]
        assert (await endpoint.thread(endpoint.alice, "t\u0456read")).status_code == 400

        # Without a token, or with a wrong one: nobody.
        assert (await endpoint.post(None, run_input(thread, [asked]))).status_code == 401
        assert (await endpoint.post("nope", run_input(thread, [asked]))).status_code == 401

        # Alice's session still waits, undecided; nothing ran.
        alice_session = DurableTools(client, task_queue).run(session_id("agui", "alice", thread))
        snapshot = await wait_for(alice_session, lambda s: bool(s.pending_approvals))
        assert snapshot.status == RunStatus.AWAITING_APPROVAL
        assert endpoint.ran == []
        assert session_id("agui", "ALICE", thread) == alice_session.run_id  # one person
        assert session_id("agui", "bob", thread) != alice_session.run_id
