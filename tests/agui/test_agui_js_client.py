"""`@ag-ui/client`'s HttpAgent (npm, run by node) drives a conversation against the endpoint
on a real dev server and worker: streamed text, a tool call with its result, an interrupt
resumed with an approval (the tool runs once), a second message in the same thread; every
event validates against `@ag-ui/core`'s own zod schema, and against the Python types."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest
from agui_support import EVENT, Chat, chat, of_type
from temporalio.client import Client

from durable_tools import DurableTools
from durable_tools.agui import session_id
from support import answer, calls

JS = Path(__file__).parent / "js"


def node_client() -> str:
    """The node binary, once `make agui-js` installed the client (`npm ci`); skipped
    without them, except under CI, which installs both and must not skip."""
    node = shutil.which("node")
    if node is None or not (JS / "node_modules" / "@ag-ui" / "client").is_dir():
        if os.environ.get("CI", "").lower() not in ("", "0", "false"):
            pytest.fail("node and tests/agui/js/node_modules are needed: run `make agui-js`")
        pytest.skip("needs node and `make agui-js` (npm ci in tests/agui/js)")
    return node


async def run_node(node: str, script: str, endpoint: Chat, thread: str) -> Any:
    """Run `script` (in tests/agui/js) as alice on `thread`: the JSON it prints."""
    process = await asyncio.create_subprocess_exec(
        node,
        script,
        endpoint.url,
        endpoint.alice,
        thread,
        cwd=JS,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 300)
    assert process.returncode == 0, err.decode()
    return json.loads(out)


def texts(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in of_type(events, "TEXT_MESSAGE_CONTENT"))


async def test_http_agent_holds_a_conversation_with_an_approval(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    node = node_client()
    script = [
        calls(("c1", "lookup", {"q": "x"})),  # message 1
        answer("x is found"),
        calls(("c2", "pay", {"amount_cents": 500})),  # message 2, approved by resume
        answer("paid it"),
        answer("you are welcome"),  # message 3
    ]
    thread = f"js-{uuid.uuid4().hex[:8]}"
    async with chat(client, task_queue, tmp_path, script) as endpoint:
        report = await run_node(node, "conversation.mjs", endpoint, thread)
        ran = list(endpoint.ran)
    runs = report["runs"]
    assert len(runs) == 4
    for run in runs:
        assert run["error"] is None and run["invalid"] == [], run
        for event in run["events"]:
            EVENT.validate_python(event)
        kinds = [e["type"] for e in run["events"]]
        assert kinds[0] == "RUN_STARTED" and kinds[-1] == "RUN_FINISHED", kinds
    one, two, three, four = (run["events"] for run in runs)
    assert [e["toolCallName"] for e in of_type(one, "TOOL_CALL_START")] == ["lookup"]
    assert [e["content"] for e in of_type(one, "TOOL_CALL_RESULT")] == ["found x"]
    assert texts(one) == "x is found"
    (interrupt,) = two[-1]["outcome"]["interrupts"]
    assert interrupt["metadata"]["tool"] == "pay" and interrupt["toolCallId"] == "c2"
    assert [e["content"] for e in of_type(three, "TOOL_CALL_RESULT")] == ["paid 500"]
    assert texts(three) == "paid it"
    assert texts(four) == "you are welcome"
    assert ran == ["lookup x", "pay 500"]
    # The client built the thread from the events: the user's messages and the answers.
    said = [(m["role"], m.get("content")) for m in report["messages"] if m.get("content")]
    assert ("assistant", "paid it") in said and ("user", "thanks") in said


async def test_http_agent_runs_a_frontend_tool(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    node = node_client()
    script = [calls(("c1", "showWeather", {"city": "Paris"})), answer("Sunny, 21 C")]
    thread = f"js-{uuid.uuid4().hex[:8]}"
    async with chat(client, task_queue, tmp_path, script) as endpoint:
        report = await run_node(node, "frontend_tools.mjs", endpoint, thread)
        session = DurableTools(client).run(session_id("agui", "alice", thread))
        (record,) = await session.timeline()
    first, second = report["runs"]
    for run in (first, second):
        assert run["error"] is None and run["invalid"] == [], run
        for event in run["events"]:
            EVENT.validate_python(event)
    (start,) = of_type(first["events"], "TOOL_CALL_START")
    assert start["toolCallName"] == "showWeather"
    (args,) = of_type(first["events"], "TOOL_CALL_ARGS")
    assert json.loads(args["delta"]) == {"city": "Paris"}
    assert first["events"][-1]["result"]["status"] == "awaiting_tools"
    assert first["pending"] == ["c1"]  # what HttpAgent took as the calls the page answers
    assert texts(second["events"]) == "Sunny, 21 C"
    # The page's result reached the run through the callback path.
    assert record.status == "completed" and "21 C in Paris" in (record.result or "")
