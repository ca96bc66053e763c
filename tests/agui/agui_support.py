"""Shared pieces of the AG-UI endpoint tests: the tools a chat uses, the endpoint served by
uvicorn on a free port for a worker on the test's task queue, and a client that posts a
`RunAgentInput` and reads the server-sent events back, each one validated as the
protocol's own event type."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from ag_ui.core import Event
from pydantic import TypeAdapter
from temporalio.client import Client

from durable_tools import AgentConfig, DurableTools, ToolRegistry
from durable_tools.agui import AguiConfig, create_agui_app
from durable_tools.inbox import AuthConfig, InboxServer, TokenStore, add_token
from support import running_worker, write_script

EVENT = TypeAdapter(Event)


def chat_registry(ran: list[str]) -> ToolRegistry:
    """`lookup` (runs at once) and `pay` (asks for approval; `card` redacted)."""
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    def lookup(q: str) -> str:
        """Look something up."""
        ran.append(f"lookup {q}")
        return f"found {q}"

    @registry.tool(approval=True, idempotent=True, redact=("card",))
    def pay(amount_cents: int, card: str = "") -> str:
        """Pay an amount (needs approval)."""
        ran.append(f"pay {amount_cents}")
        return f"paid {amount_cents}"

    # A callback tool of the operator's (run by some device of theirs): not the browser's.
    registry.callback_tool(
        "device_check",
        parameters={"type": "object", "properties": {"serial": {"type": "string"}}},
        description="Check a device (run by the operator's device agent).",
    )
    return registry


@dataclass
class Chat:
    """The endpoint's URL, alice's and bob's tokens, and the tools' record of calls."""

    url: str
    alice: str
    bob: str
    ran: list[str] = field(default_factory=list)
    comments: int = 0
    """SSE comment lines (keep-alives) read by `stream`."""
    last_id: str | None = None
    """The SSE id of the last event `stream` read (the endpoint's rejoin cursor)."""

    async def post(self, token: str | None, body: Any, **headers: str) -> httpx.Response:
        """POST `body` (JSON unless bytes) and return the whole response."""
        sent = {"content-type": "application/json", **headers}
        if token is not None:
            sent["authorization"] = f"Bearer {token}"
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        async with httpx.AsyncClient(timeout=120) as http:
            return await http.post(self.url, content=content, headers=sent)

    @asynccontextmanager
    async def stream(
        self, token: str, body: dict[str, Any]
    ) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
        """One AG-UI run read as it comes: its events, each validated, one at a time."""
        headers = {"content-type": "application/json", "authorization": f"Bearer {token}"}
        async with (
            httpx.AsyncClient(timeout=120) as http,
            http.stream("POST", self.url, json=body, headers=headers) as response,
        ):
            assert response.status_code == 200

            async def events() -> AsyncIterator[dict[str, Any]]:
                async for line in response.aiter_lines():
                    self.comments += line.startswith(":")
                    if line.startswith("id: "):
                        self.last_id = line[len("id: ") :]
                    if line.startswith("data: "):
                        data = json.loads(line[len("data: ") :])
                        EVENT.validate_python(data)
                        yield data

            yield events()

    async def thread(self, token: str, thread_id: str) -> httpx.Response:
        """GET the thread so far."""
        async with httpx.AsyncClient(timeout=60) as http:
            headers = {"authorization": f"Bearer {token}"}
            return await http.get(f"{self.url}threads/{thread_id}", headers=headers)

    async def interrupted(self, thread: str, message: dict[str, Any]) -> dict[str, Any]:
        """Send alice's `message` (its answer asks for an approval): the one interrupt."""
        events = await self.run(self.alice, run_input(thread, [message]))
        (interrupt,) = events[-1]["outcome"]["interrupts"]
        return dict(interrupt)

    async def run(self, token: str, body: dict[str, Any]) -> list[dict[str, Any]]:
        """One AG-UI run: its events as JSON objects, each validated as an AG-UI event."""
        response = await self.post(token, body)
        assert response.status_code == 200, response.text
        assert response.headers["content-type"].startswith("text/event-stream")
        return sse_events(response.text)


def sse_events(text: str) -> list[dict[str, Any]]:
    """The `data:` payloads of an SSE body, each checked against the protocol's types."""
    events = []
    for line in text.splitlines():
        if line.startswith("data: "):
            data = json.loads(line[len("data: ") :])
            EVENT.validate_python(data)
            events.append(data)
    return events


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


def run_input(
    thread: str,
    messages: list[dict[str, Any]],
    resume: list[dict[str, Any]] | None = None,
    tools: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "threadId": thread,
        "runId": f"run-{uuid.uuid4().hex[:8]}",
        "messages": messages,
        "state": {},
        "tools": tools or [],
        "context": [],
        "forwardedProps": {},
    }
    if resume is not None:
        body["resume"] = resume
    return body


def user(text: str, message_id: str | None = None) -> dict[str, Any]:
    return {"id": message_id or f"m-{uuid.uuid4().hex[:8]}", "role": "user", "content": text}


def tool_message(call_id: str, content: str, message_id: str | None = None) -> dict[str, Any]:
    """A front end's result of its tool's call `call_id`."""
    ident = message_id or f"tm-{uuid.uuid4().hex[:8]}"
    return {"id": ident, "role": "tool", "toolCallId": call_id, "content": content}


WEATHER_TOOL = {
    "name": "showWeather",
    "description": "Show the weather of a city in the page (the browser runs it).",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
"""A frontend tool, as an AG-UI client declares it."""


@asynccontextmanager
async def chat(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    steps: list[dict[str, Any]],
    *,
    agent: dict[str, Any] | None = None,
    tools: ToolRegistry | None = None,
    worker: dict[str, Any] | None = None,
    **options: Any,
) -> AsyncIterator[Chat]:
    """A worker for `chat_registry` (or `tools`; `worker` holds further worker options)
    playing `steps` (or the `agent`'s own model), and the endpoint served for it;
    `agent` holds further `AgentConfig` fields, `options` further `AguiConfig` ones."""
    tokens = tmp_path / "tokens.json"
    alice, bob = add_token(tokens, "alice"), add_token(tokens, "bob")
    ran: list[str] = []
    config = AguiConfig(
        agent=AgentConfig(**{"model": write_script(tmp_path, steps), **(agent or {})}),
        auth=AuthConfig(TokenStore(tokens)),
        poll_interval=0.1,
        **options,
    )
    app = create_agui_app(DurableTools(client, task_queue), config)
    server = InboxServer(app, port=0)
    registry = tools if tools is not None else chat_registry(ran)
    async with running_worker(client, registry, task_queue, **(worker or {})):
        await server.start()
        try:
            yield Chat(f"{server.url}/", alice, bob, ran)
        finally:
            await server.stop()
