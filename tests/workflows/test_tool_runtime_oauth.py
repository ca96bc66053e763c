"""A plain workflow with no model calls an OAuth'd tool through `ToolRuntime`: the call
pauses durably for the user's authorization, the OAuth callback server signals the host's
prefixed handler, and the tool runs once with the user's token. On a real dev server with
the fake OAuth provider."""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.client import Client

with workflow.unsafe.imports_passed_through():
    import oauth_support
    from durable_tools.client import AgentRun
    from durable_tools.oauth import OAuthBroker
    from durable_tools.tools import Identity, OAuthRequirement, ToolContext, ToolRegistry
    from durable_tools.workflows import RunStatus, ToolRuntime
    from oauth_support import OAuthSetup, open_link
from support import assert_not_wedged, running_worker, wait_for

PREFIX = "calendar_"


@workflow.defn(sandboxed=True)
class DigestWorkflow:
    """A nightly digest: reads the user's calendar with their OAuth grant."""

    @workflow.init
    def __init__(self, user: str) -> None:
        self.tools = ToolRuntime(identity=Identity(user=user), prefix=PREFIX)

    @workflow.run
    async def run(self, user: str) -> list[Any]:
        reply = await self.tools.call("read_calendar", {"day": "friday"})
        return [reply.status, reply.content]


oauth = oauth_support.oauth  # the fixture, by the name the tests ask for


async def test_a_plain_workflow_pauses_for_oauth_and_resumes(
    client: Client, task_queue: str, oauth: OAuthSetup
) -> None:
    _, manager, _ = oauth
    tokens: list[str] = []
    registry = ToolRegistry()

    @registry.tool(read_only=True, oauth=OAuthRequirement(provider="fake", scopes=("read",)))
    def read_calendar(day: str, ctx: ToolContext) -> str:
        """Read the user's calendar for a day."""
        assert ctx.access_token
        tokens.append(ctx.access_token)
        return f"{day}: standup"

    async with running_worker(
        client, registry, task_queue, oauth=OAuthBroker(manager), workflows=[DigestWorkflow]
    ):
        handle = await client.start_workflow(
            DigestWorkflow.run, "alice", id=f"digest-{task_queue}", task_queue=task_queue
        )
        run = AgentRun(client, handle.id, prefix=PREFIX)
        paused = await wait_for(run, lambda s: bool(s.pending_authorizations), 60)
        assert paused.status == RunStatus.AWAITING_AUTHORIZATION and tokens == []
        # The user opens the link; the callback signals `calendar_authorization_completed`.
        page = await open_link(paused.pending_authorizations[0].authorization_url)
        assert page.status_code == 200, page.text
        assert await handle.result() == ["completed", "friday: standup"]
        await assert_not_wedged(handle, allowed=0)
    assert len(tokens) == 1
