"""A tool that needs the user's OAuth grant, called by a Pydantic AI agent and by an OpenAI
Agents agent through durable-tools' runtime: the call pauses durably inside the agent's
run, the user opens the link, the callback server signals the host's prefixed handler,
and the tool runs once with the user's token; the agent's model reads its result. On a
real dev server with the fake OAuth provider and a fake OpenAI server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from temporalio import workflow
from temporalio.client import Client
from temporalio.converter import DataConverter

with workflow.unsafe.imports_passed_through():
    from agents import OpenAIProvider, set_tracing_disabled
    from oauth_hosts import PREFIX, PydanticCalendarWorkflow, calendar_reader
    from oauth_openai_host import OpenAICalendarWorkflow
    from pydantic_ai.durable_exec.temporal import AgentPlugin, PydanticAIPlugin
    from temporalio.openai_agents import OpenAIAgentsPlugin

    from durable_tools.client import AgentRun
    from durable_tools.oauth import OAuthBroker
    from durable_tools.tools import OAuthRequirement, ToolContext, ToolRegistry
    from durable_tools.workflows import RunStatus
    from fake_openai import FakeOpenAIServer, RecordedRequest, responses_response
    from oauth_support import OAuthSetup, open_link, serving_callback
from support import assert_not_wedged, running_worker, wait_for


@pytest.fixture
async def oauth(
    client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[OAuthSetup]:
    async with serving_callback(client, tmp_path, monkeypatch) as setup:
        yield setup


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


def reading_model(request: RecordedRequest) -> dict[str, Any]:
    """The OpenAI model: reads Friday's calendar, then repeats what it read."""
    outputs = [
        item["output"]
        for item in request.json.get("input", [])
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]
    if outputs:
        return responses_response(text=f"I read: {outputs[0]}")
    return responses_response(function_calls=[("c1", "read_calendar", '{"day": "friday"}')])


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(reading_model) as server:
        yield server


def _with_plugin(client: Client, framework: str, fake: FakeOpenAIServer) -> Client:
    """The session's server through a client with the framework's plugin."""
    if framework == "pydantic_ai":
        plugins: list[Any] = [PydanticAIPlugin()]
        converter = client.config()["data_converter"]
    else:
        set_tracing_disabled(True)
        provider = OpenAIProvider(api_key="sk-fake", base_url=fake.base_url, use_responses=True)
        plugins = [OpenAIAgentsPlugin(model_provider=provider)]
        converter = DataConverter()  # the plugin sets its own payload converter
    return Client(
        client.service_client,
        namespace=client.namespace,
        data_converter=converter,
        plugins=plugins,
    )


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
    framework_client = _with_plugin(client, framework, fake_openai)
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
