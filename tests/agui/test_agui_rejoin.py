"""Rejoining an AG-UI run on a real dev server: every event carries the endpoint's rejoin
cursor as its SSE id; a client whose connection broke sends its message again with the
last id it got (`forwardedProps.lastEventId`, or the `Last-Event-ID` header) and gets
the rest of the events: nothing it had again, nothing missing."""

from __future__ import annotations

import base64
import json
import threading
import uuid
from pathlib import Path
from typing import Any

from agui_support import chat, of_type, run_input, sse_events, user
from temporalio.client import Client

from fake_openai import CannedResponse, FakeOpenAIServer, chat_stream
from support import answer, calls


def rejoin(body: dict[str, Any], cursor: str) -> dict[str, Any]:
    """The same input again (a new AG-UI run id), with the last event id the client got."""
    return {
        **body,
        "runId": f"run-{uuid.uuid4().hex[:8]}",
        "forwardedProps": {"lastEventId": cursor},
    }


def text(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in of_type(events, "TEXT_MESSAGE_CONTENT"))


async def test_a_client_rejoining_mid_answer_gets_the_rest_of_the_text(
    client: Client, task_queue: str, tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    hold = threading.Event()
    stream = chat_stream(["Hel", "lo ", "there"])
    stream.insert(2, hold)  # after "Hel": the provider stops sending until released
    openai_server.add(CannedResponse(sse=stream))
    thread = f"t-{uuid.uuid4().hex[:8]}"
    body = run_input(thread, [user("hi")])
    before: list[dict[str, Any]] = []
    try:
        async with chat(
            client, task_queue, tmp_path, [], agent={"model": "openai:gpt-t"}
        ) as endpoint:
            async with endpoint.stream(endpoint.alice, body) as events:
                async for event in events:
                    before.append(event)
                    if event["type"] == "TEXT_MESSAGE_CONTENT":
                        break  # the connection breaks here, mid-answer
            cursor = endpoint.last_id
            assert cursor is not None
            hold.set()
            after = await endpoint.run(endpoint.alice, rejoin(body, cursor))
    finally:
        hold.set()
    assert text(before) == "Hel"
    assert after[0]["type"] == "RUN_STARTED" and after[-1]["type"] == "RUN_FINISHED"
    assert text(after) == "lo there"  # the rest, not "Hello there" again
    (started,) = of_type(before, "TEXT_MESSAGE_START")
    assert not of_type(after, "TEXT_MESSAGE_START")  # the same message goes on
    assert {e["messageId"] for e in of_type(after, "TEXT_MESSAGE_CONTENT")} == {
        started["messageId"]
    }
    assert len(of_type(after, "TEXT_MESSAGE_END")) == 1
    assert not of_type(after, "STEP_STARTED")  # the client has the step open already
    assert after[-1]["result"]["answer"] == "Hello there"


async def test_a_client_rejoining_after_a_tool_call_gets_no_call_twice_and_no_gap(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    script = [
        calls(("c1", "lookup", {"q": "x"}), ("c2", "lookup", {"q": "y"})),
        answer("both found"),
    ]
    thread = f"t-{uuid.uuid4().hex[:8]}"
    body = run_input(thread, [user("look up x and y")])
    async with chat(client, task_queue, tmp_path, script) as endpoint:
        before: list[dict[str, Any]] = []
        async with endpoint.stream(endpoint.alice, body) as events:
            async for event in events:
                before.append(event)
                if event["type"] == "TOOL_CALL_RESULT":
                    break  # gone after the first call's result
        cursor = endpoint.last_id
        assert cursor is not None
        after = await endpoint.run(endpoint.alice, rejoin(body, cursor))
        both = before + after
        assert sorted(e["toolCallId"] for e in of_type(both, "TOOL_CALL_START")) == ["c1", "c2"]
        assert sorted(e["toolCallId"] for e in of_type(both, "TOOL_CALL_RESULT")) == ["c1", "c2"]
        assert text(both) == "both found"
        assert after[-1]["type"] == "RUN_FINISHED"
        assert endpoint.ran == ["lookup x", "lookup y"]

        # The Last-Event-ID header says the same, and the same cursor gives the same rest.
        headers = {"last-event-id": cursor}
        response = await endpoint.post(endpoint.alice, {**body, "runId": "run-again"}, **headers)
        again = sse_events(response.text)
        for kind in ("TOOL_CALL_START", "TOOL_CALL_RESULT"):
            assert [e["toolCallId"] for e in of_type(again, kind)] == [
                e["toolCallId"] for e in of_type(after, kind)
            ]
        assert text(again) == text(after)
        assert endpoint.ran == ["lookup x", "lookup y"]


async def test_forged_cursors_are_refused(client: Client, task_queue: str, tmp_path: Path) -> None:
    thread = f"t-{uuid.uuid4().hex[:8]}"
    body = run_input(thread, [user("hi")])

    def packed(data: Any) -> str:
        return "c1." + base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    forged = [
        "x",
        "c1.!!!",
        "c1." + "A" * 5_000,
        packed([1, 2]),
        packed({"b": -1}),
        packed({"b": "1"}),
        packed({"b": 1, "z": 1}),
        packed({"b": 1, "c": ["c"] * 300}),
        packed({"b": 1, "t": {"turn-1-1": "x"}}),
        packed({"b": 1, "o": "o" * 65}),
        packed({"b": float("nan")}),
    ]
    async with chat(client, task_queue, tmp_path, [answer("hi")]) as endpoint:
        for cursor in forged:
            response = await endpoint.post(endpoint.alice, rejoin(body, cursor))
            assert response.status_code == 400, cursor[:40]
            assert "lastEventId" in response.json()["error"]
        response = await endpoint.post(endpoint.alice, body, **{"last-event-id": "c1.bm9wZQ"})
        assert response.status_code == 400
