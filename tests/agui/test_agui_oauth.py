"""OAuth waits as AG-UI interrupts on a real dev server, with the fake provider and the
OAuth callback server: a call that needs the user's authorization ends the AG-UI run with
an interrupt carrying the link; the user authorizes at the provider, the front end resumes
the interrupt, and the run goes on to its answer. A resume that cancels declines the
authorization (the model is told); a resume for another call is a RUN_ERROR."""

from __future__ import annotations

import uuid
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

from agui_support import Chat, chat, of_type, run_input, user
from temporalio.client import Client

import oauth_support
from durable_tools import DurableTools, OAuthRequirement, ToolContext, ToolRegistry
from durable_tools.agui import session_id
from durable_tools.oauth import OAuthBroker
from oauth_support import OAuthSetup, open_link
from support import answer, calls, wait_for

oauth = oauth_support.oauth  # the fixture, by the name the tests ask for


def calendar(read: list[str]) -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(read_only=True, oauth=OAuthRequirement(provider="fake", scopes=("read",)))
    def read_calendar(day: str, ctx: ToolContext) -> str:
        """Read the user's calendar for a day."""
        assert ctx.access_token
        read.append(day)
        return f"{day}: standup"

    return registry


def calendar_chat(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    oauth: OAuthSetup,
    script: list[dict[str, Any]],
    read: list[str],
) -> AbstractAsyncContextManager[Chat]:
    """The endpoint for a worker of `calendar` with the fake provider's OAuth broker."""
    _, manager, _ = oauth
    broker = {"oauth": OAuthBroker(manager)}
    return chat(client, task_queue, tmp_path, script, tools=calendar(read), worker=broker)


def _resume(interrupt_id: str, status: str = "resolved") -> list[dict[str, Any]]:
    return [{"interruptId": interrupt_id, "status": status}]


async def test_an_authorization_is_an_interrupt_with_its_link(
    client: Client, task_queue: str, tmp_path: Path, oauth: OAuthSetup
) -> None:
    read: list[str] = []
    script = [calls(("c1", "read_calendar", {"day": "monday"})), answer("standup on monday")]
    thread = f"t-{uuid.uuid4().hex[:8]}"
    async with calendar_chat(client, task_queue, tmp_path, oauth, script, read) as endpoint:
        asked = user("what's on monday?")
        events = await endpoint.run(endpoint.alice, run_input(thread, [asked]))
        finished = events[-1]
        assert finished["type"] == "RUN_FINISHED", finished
        (interrupt,) = finished["outcome"]["interrupts"]
        assert interrupt["id"] == "authorization:c1"
        assert interrupt["reason"] == "oauth_authorization" and interrupt["toolCallId"] == "c1"
        link = interrupt["metadata"]["url"]
        assert interrupt["metadata"]["provider"] == "fake" and "code_challenge" in link
        assert read == []

        # A resume for a call that waits for nothing decides nothing.
        wrong = await endpoint.run(
            endpoint.alice, run_input(thread, [asked], resume=_resume("authorization:c9"))
        )
        assert wrong[-1]["type"] == "RUN_ERROR" and wrong[-1]["code"] == "NothingPending"

        # The user authorizes at the provider; the front end resumes the interrupt.
        assert (await open_link(link)).status_code == 200
        events = await endpoint.run(
            endpoint.alice, run_input(thread, [asked], resume=_resume(interrupt["id"]))
        )
        assert events[-1]["type"] == "RUN_FINISHED", events[-1]
        assert events[-1]["result"]["answer"] == "standup on monday"
        assert [e["content"] for e in of_type(events, "TOOL_CALL_RESULT")] == ["monday: standup"]
        assert read == ["monday"]
        # The same resume again (a retry): nothing waits, the message's answer comes.
        again = await endpoint.run(
            endpoint.alice, run_input(thread, [asked], resume=_resume(interrupt["id"]))
        )
        assert again[-1]["type"] == "RUN_FINISHED" and read == ["monday"]


async def test_cancelling_an_authorization_interrupt_declines_it(
    client: Client, task_queue: str, tmp_path: Path, oauth: OAuthSetup
) -> None:
    read: list[str] = []
    script = [calls(("c1", "read_calendar", {"day": "friday"})), answer("could not read it")]
    thread = f"t-{uuid.uuid4().hex[:8]}"
    async with calendar_chat(client, task_queue, tmp_path, oauth, script, read) as endpoint:
        asked = user("what's on friday?")
        events = await endpoint.run(endpoint.alice, run_input(thread, [asked]))
        (interrupt,) = events[-1]["outcome"]["interrupts"]
        # Bob cannot answer alice's interrupt: his thread of that id does not exist.
        body = run_input(thread, [asked], resume=_resume(interrupt["id"], "cancelled"))
        assert (await endpoint.post(endpoint.bob, body)).status_code == 404
        events = await endpoint.run(endpoint.alice, body)
        assert events[-1]["type"] == "RUN_FINISHED", events[-1]
        assert events[-1]["result"]["answer"] == "could not read it"
        session = DurableTools(client).run(session_id("agui", "alice", thread))
        (record,) = await session.timeline()
        assert record.status != "completed" and read == []
        snapshot = await wait_for(session, lambda s: not s.pending_authorizations)
        assert snapshot.pending_authorizations == []
