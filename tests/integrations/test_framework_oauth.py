"""A tool that needs the user's OAuth grant, called by a Pydantic AI agent and by an OpenAI
Agents agent through durable-tools' runtime: the call pauses durably inside the agent's
run, the user opens the link, the callback server signals the host's prefixed handler,
and the tool runs once with the user's token; the agent's model reads its result. On a
real dev server with the fake OAuth provider and a fake OpenAI server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from temporalio import workflow
from temporalio.client import Client

with workflow.unsafe.imports_passed_through():
    from oauth_hosts import PREFIX, PydanticCalendarWorkflow, calendar_reader
    from oauth_openai_host import OpenAICalendarWorkflow
    from pydantic_ai.durable_exec.temporal import AgentPlugin

    import oauth_support
    from durable_tools.client import AgentRun
    from durable_tools.oauth import OAuthBroker
    from durable_tools.tools import OAuthRequirement, ToolContext, ToolRegistry
    from durable_tools.workflows import RunStatus
    from fake_openai import FakeOpenAIServer
    from framework_support import (
        openai_agents_client,
        pydantic_ai_client,
        responses_call_then_report,
    )
    from oauth_support import OAuthSetup, open_link
from support import assert_not_wedged, running_worker, wait_for

oauth = oauth_support.oauth  # the fixture, by the name the tests ask for


def calendar_registry(tokens: list[str]) -> ToolRegistry:
    """`read_calendar(day)`, which needs the user's grant for the fake provider; each run
    appends the token it was given to `tokens`."""
    registry = ToolRegistry()

    @registry.tool(read_only=True, oauth=OAuthRequirement(provider="fake", scopes=("read",)))
    def read_calendar(day: str, ctx: ToolContext) -> str:
        """Read the user's calendar for a day."""
        assert ctx.access_token
        tokens.append(ctx.access_token)
        return f"{day}: standup"

    return registry


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAIServer]:
    model = responses_call_then_report("read_calendar", '{"day": "friday"}', "c1")
    with FakeOpenAIServer(model) as server:
        yield server


@pytest.mark.parametrize("framework", ["pydantic_ai", "openai_agents"])
async def test_an_agents_oauth_tool_pauses_and_resumes_through_the_callback(
    client: Client,
    task_queue: str,
    oauth: OAuthSetup,
    fake_openai: FakeOpenAIServer,
    framework: str,
) -> None:
    _, manager, _ = oauth
    tokens: list[str] = []
    if framework == "pydantic_ai":
        framework_client = pydantic_ai_client(client)
    else:
        framework_client = openai_agents_client(client, fake_openai)
    host: Any = PydanticCalendarWorkflow if framework == "pydantic_ai" else OpenAICalendarWorkflow
    options: dict[str, Any] = {"workflows": [host], "oauth": OAuthBroker(manager)}
    if framework == "pydantic_ai":
        options["plugins"] = [AgentPlugin(calendar_reader)]
    async with running_worker(framework_client, calendar_registry(tokens), task_queue, **options):
        handle = await framework_client.start_workflow(
            host.run, "alice", id=f"calendar-{framework}-{task_queue}", task_queue=task_queue
        )
        run = AgentRun(client, handle.id, prefix=PREFIX)
        paused = await wait_for(run, lambda s: bool(s.pending_authorizations), 60)
        assert paused.status == RunStatus.AWAITING_AUTHORIZATION and tokens == []
        [waiting] = paused.pending_authorizations
        assert (waiting.tool, waiting.provider) == ("read_calendar", "fake")
        # The user opens the link; the callback signals `calendar_authorization_completed`.
        page = await open_link(waiting.authorization_url)
        assert page.status_code == 200, page.text
        assert await handle.result() == "I read: friday: standup"
        await assert_not_wedged(handle)
    assert len(tokens) == 1
