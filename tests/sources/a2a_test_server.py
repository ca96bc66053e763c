"""A real A2A agent for the tests, built with the official `a2a-sdk` server side.

Served by uvicorn on 127.0.0.1 (a free port) in a thread of the test process, so a test
can read what the agent saw (`AgentState`) and hold or release its slow skill.

Skills (chosen by the `skill_id` in the message metadata, as `attach_a2a` sends it):
- `echo`: completes at once with an artifact `echo: <text>` (and the data part as JSON).
- `slow`: three `working` status updates (`step 1/3` ...), then waits for
  `AgentState.release` before completing; cancellable while it waits.
- `fail`: fails with the message `the printer is on fire`.
- `ask`: stops in `input-required` with a question.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from a2a.helpers import new_task_from_user_message, new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Part,
)
from google.protobuf.json_format import MessageToDict
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.types import ASGIApp, Receive, Scope, Send


@dataclass
class AgentState:
    """What the agent saw, shared with the test (thread-safe enough for lists and events)."""

    authorization: list[str | None] = field(default_factory=list)
    """The Authorization header of every JSON-RPC request, in order."""
    messages: list[dict[str, Any]] = field(default_factory=list)
    """Every user message received (as JSON)."""
    cancelled: list[str] = field(default_factory=list)
    """Task ids the agent was asked to cancel."""
    slow_started: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    """Set it to let the `slow` skill complete."""


class Recorder:
    """ASGI middleware: records the Authorization header of each request to the agent."""

    def __init__(self, app: ASGIApp, state: AgentState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            headers = dict(scope["headers"])
            value = headers.get(b"authorization")
            self.state.authorization.append(value.decode() if value is not None else None)
        await self.app(scope, receive, send)


class TestAgent(AgentExecutor):
    def __init__(self, state: AgentState) -> None:
        self.state = state

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        assert message is not None
        self.state.messages.append(MessageToDict(message))
        task = context.current_task or new_task_from_user_message(message)
        if context.current_task is None:
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        skill = str(dict(message.metadata).get("skill_id") or "echo")
        text = context.get_user_input()
        if skill == "echo":
            data = [MessageToDict(p.data) for p in message.parts if p.HasField("data")]
            reply = f"echo: {text}" + (f" {json.dumps(data[0], sort_keys=True)}" if data else "")
            await updater.add_artifact([Part(text=reply)], name="echo")
            await updater.complete()
        elif skill == "slow":
            for step in range(1, 4):
                await updater.start_work(
                    new_text_message(f"step {step}/3", context_id=task.context_id, task_id=task.id)
                )
                await asyncio.sleep(0.05)
            self.state.slow_started.set()
            while not self.state.release.is_set():
                await asyncio.sleep(0.05)  # cancelled here by tasks/cancel
            await updater.add_artifact([Part(text="slow work done")], name="result")
            await updater.complete()
        elif skill == "fail":
            await updater.failed(
                new_text_message(
                    "the printer is on fire", context_id=task.context_id, task_id=task.id
                )
            )
        elif skill == "ask":
            await updater.requires_input(
                new_text_message(
                    "Which city do you mean?", context_id=task.context_id, task_id=task.id
                )
            )
        else:
            await updater.reject(
                new_text_message(f"no skill {skill}", context_id=task.context_id, task_id=task.id)
            )

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id = context.task_id or ""
        self.state.cancelled.append(task_id)
        updater = TaskUpdater(event_queue, task_id, context.context_id or "")
        await updater.cancel()


def agent_card(url: str, *, streaming: bool) -> AgentCard:
    skills = [
        AgentSkill(id="echo", name="Echo", description="Repeats the message.", tags=["test"]),
        AgentSkill(
            id="slow",
            name="Slow job",
            description="A long job that reports three steps.",
            tags=["test"],
        ),
        AgentSkill(id="fail", name="Fail", description="Always fails.", tags=["test"]),
        AgentSkill(id="ask", name="Ask", description="Asks a question back.", tags=["test"]),
    ]
    return AgentCard(
        name="Test Agent",
        description="An agent for the durable-tools tests.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=streaming),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=skills,
    )


class A2AServer:
    """The test agent on 127.0.0.1 in a background thread; `stop()` ends it."""

    def __init__(self, *, streaming: bool = True) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.state = AgentState()
        card = self.card = agent_card(f"{self.url}/", streaming=streaming)
        handler = DefaultRequestHandler(
            agent_executor=TestAgent(self.state),
            task_store=InMemoryTaskStore(),
            agent_card=card,
        )
        app = Starlette(
            routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/")],
            middleware=[Middleware(Recorder, state=self.state)],
        )
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def start(self) -> A2AServer:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the A2A test server did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.state.release.set()
        self.server.should_exit = True
        self.thread.join(timeout=10)
