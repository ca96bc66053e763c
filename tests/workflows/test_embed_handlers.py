"""An agent loop embedded in a user's workflow has every handler of the agent workflow
(one table, `RunHandlers`), and the parties outside the workflow reach them: the OAuth
callback, a callback-tool client and the user answering an MCP server's question.

On a real dev server, with the fake OAuth provider and the MCP elicitation server.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from temporalio import workflow
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError

with workflow.unsafe.imports_passed_through():
    # The sandbox re-imports this module for its host workflows: what it imports (the
    # CLI and the OAuth callback server included) is imported once, outside the sandbox.
    import oauth_support
    from cli_support import cli, cli_env  # noqa: F401  (a fixture)
    from durable_tools import (
        AgentConfig,
        AgentRun,
        DurableTools,
        Identity,
        OAuthRequirement,
        RunStatus,
        ToolContext,
        ToolRegistry,
    )
    from durable_tools.callbacks import serve_callbacks
    from durable_tools.oauth import OAuthBroker
    from durable_tools.sources import McpPool, McpStdio, attach_mcp
    from durable_tools.workflows import AgentInput, AgentLoop, ApprovalDecision, RunSnapshot
    from oauth_support import OAuthSetup, open_link
from support import answer, assert_not_wedged, calls, running_worker, wait_for, write_script

ELICIT_SERVER = str(Path(__file__).parent.parent / "sources" / "mcp_elicit_server.py")

# Queries every workflow answers, whatever its class.
BUILT_IN = {"__stack_trace", "__enhanced_stack_trace", "__temporal_workflow_metadata"}


@workflow.defn(sandboxed=True)
class EmbeddingWorkflow:
    """A user's workflow with an agent loop inside, its handlers prefixed `agent_`."""

    @workflow.init
    def __init__(self, input: AgentInput) -> None:
        self.loop = AgentLoop(input)
        self.loop.register_handlers(prefix="agent_")

    @workflow.run
    async def run(self, input: AgentInput) -> str:
        result = await self.loop.run()
        return f"{result.status.value}: {result.final_answer}"

    @workflow.query
    def status(self) -> str:
        """The host's own query, named like one of the agent's."""
        return "host ok"


@workflow.defn(sandboxed=True)
class ClashingWorkflow:
    """Registers a loop under prefixes that cannot work; returns what it was told."""

    @workflow.run
    async def run(self, input: AgentInput) -> list[str]:
        refusals = []
        for prefix in ("", "a b", "x" * 65, "agent_\n", "agent_"):
            try:
                AgentLoop(input).register_handlers(prefix)
            except ValueError as error:
                refusals.append(str(error))
        # The second loop under the same prefix would take the first one's handlers.
        try:
            AgentLoop(input).register_handlers("agent_")
        except ValueError as error:
            refusals.append(str(error))
        return refusals

    @workflow.query
    def status(self) -> str:
        return "host ok"


async def handler_names(handle: WorkflowHandle[Any, Any]) -> dict[str, set[str]]:
    """The workflow's handlers as its worker lists them (built-in queries left out)."""
    metadata = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
    definition = metadata.definition
    return {
        "update": {d.name for d in definition.update_definitions},
        "signal": {d.name for d in definition.signal_definitions},
        "query": {d.name for d in definition.query_definitions} - BUILT_IN,
    }


def prefixed(names: dict[str, set[str]], prefix: str) -> dict[str, set[str]]:
    return {
        kind: {name.removeprefix(prefix) for name in found if name.startswith(prefix)}
        for kind, found in names.items()
    }


def refund_registry(ran: list[str]) -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(approval=True, idempotent=True)
    def refund(order_id: str) -> str:
        """Refund an order (needs approval)."""
        ran.append(order_id)
        return f"refunded {order_id}"

    return registry


async def host_status(
    handle: WorkflowHandle[Any, Any], check: Callable[[RunSnapshot], bool], timeout: float = 30
) -> RunSnapshot:
    """Poll the embedded agent's `agent_status` until `check` holds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        snapshot: RunSnapshot = await handle.query("agent_status", result_type=RunSnapshot)
        if check(snapshot):
            return snapshot
        assert asyncio.get_running_loop().time() < deadline, f"never reached: {snapshot}"
        await asyncio.sleep(0.1)


async def test_an_embedded_loop_has_every_handler_of_the_agent_workflow(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    ran: list[str] = []
    step = calls(("r1", "refund", {"order_id": "A1"}))
    agent_input = AgentInput(
        prompt="refund A1",
        config=AgentConfig(model=write_script(tmp_path, [step, answer("done")])),
    )
    async with running_worker(
        client, refund_registry(ran), task_queue, workflows=[EmbeddingWorkflow]
    ):
        run = await DurableTools(client, task_queue).start(
            "refund A1", model=write_script(tmp_path, [step, answer("done")])
        )
        host = await client.start_workflow(
            EmbeddingWorkflow.run, agent_input, id=f"host-{task_queue}", task_queue=task_queue
        )
        await wait_for(run, lambda s: bool(s.pending_approvals))
        snapshot = await host_status(host, lambda s: bool(s.pending_approvals))
        own = await handler_names(run.handle)
        hosted = await handler_names(host)
        assert prefixed(hosted, "agent_") == own
        # Every handler, not only the few an embedded loop used to have.
        assert {"callback_result", "answer_input", "decide_batch", "set_policy"} <= own["update"]
        assert "authorization_completed" in own["signal"]
        assert {"pending_callbacks", "events_since", "timeline"} <= own["query"]
        assert "status" in hosted["query"]  # the host's own, beside `agent_status`
        assert await host.query(EmbeddingWorkflow.status) == "host ok"

        # A pydantic model reaches a dynamically registered handler as the model: the
        # decision is taken (a dict would fail the validator's type check).
        pending = snapshot.pending_approvals[0]
        decision = ApprovalDecision(
            call_id="r1", approve=True, decider="alice", arguments_hash=pending.arguments_hash
        )
        assert await host.execute_update("agent_decide", decision, result_type=str) == "approved"
        assert await host.result() == "completed: done"
        await run.approve("r1", arguments_hash=pending.arguments_hash)
        assert (await run.result()).status == RunStatus.COMPLETED
        await assert_not_wedged(host)
    assert ran == ["A1", "A1"]


async def host_refunding(
    client: Client, task_queue: str, tmp_path: Path, order: str
) -> tuple[WorkflowHandle[Any, Any], AgentRun]:
    """A host workflow whose embedded loop asks to refund `order`, and its `AgentRun`."""
    step = calls(("r1", "refund", {"order_id": order}))
    agent_input = AgentInput(
        prompt=f"refund {order}",
        config=AgentConfig(model=write_script(tmp_path, [step, answer("done")])),
    )
    host = await client.start_workflow(
        EmbeddingWorkflow.run, agent_input, id=f"host-{task_queue}", task_queue=task_queue
    )
    return host, AgentRun(client, host.id, prefix="agent_")


async def test_an_agent_run_handle_reaches_an_embedded_loop_by_its_prefix(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    ran: list[str] = []
    async with running_worker(
        client, refund_registry(ran), task_queue, workflows=[EmbeddingWorkflow]
    ):
        host, run = await host_refunding(client, task_queue, tmp_path, "B2")
        snapshot = await wait_for(run, lambda s: bool(s.pending_approvals))
        pending = snapshot.pending_approvals[0]
        assert (await run.timeline())[0].status == "awaiting_approval"
        assert "approval.requested" in [e.event for e in await run.events()]
        with pytest.raises(WorkflowUpdateFailedError):  # the loop's own validator answers
            await run.approve("r1", decider="alice", arguments_hash="0" * 64)
        verdict = await run.approve("r1", decider="alice", arguments_hash=pending.arguments_hash)
        assert verdict == "approved"
        assert await host.result() == "completed: done"
        assert (await run.timeline())[0].decided_by == "alice"
        with pytest.raises(TypeError, match="embedded under the prefix 'agent_'"):
            await run.result()
    assert ran == ["B2"]
    with pytest.raises(ValueError, match="only ASCII letters"):
        AgentRun(client, host.id, prefix="agent \n")


@pytest.mark.usefixtures("cli_env")
async def test_the_cli_shows_decides_and_steers_an_embedded_loop_by_its_prefix(
    client: Client, task_queue: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ran: list[str] = []
    async with running_worker(
        client, refund_registry(ran), task_queue, workflows=[EmbeddingWorkflow]
    ):
        host, run = await host_refunding(client, task_queue, tmp_path, "C3")
        pending = (await wait_for(run, lambda s: bool(s.pending_approvals))).pending_approvals[0]
        code, out, err = await cli(capsys, "show", host.id, "--prefix", "agent_")
        assert code == 0, err
        assert "r1" in out and "refund" in out and pending.arguments_hash[:12] in out
        code, _, err = await cli(capsys, "show", host.id, "--prefix", "agent \n")
        assert code == 2 and "only ASCII letters" in err
        code, _, err = await cli(capsys, "steer", host.id, "say thanks", "--prefix", "agent_")
        assert code == 0, err
        code, out, err = await cli(
            capsys,
            "approve",
            host.id,
            "r1",
            "--hash",
            pending.arguments_hash,
            "--as",
            "alice",
            "--prefix",
            "agent_",
        )
        assert code == 0, err
        assert await host.result() == "completed: done"
        code, out, err = await cli(capsys, "events", host.id, "--prefix", "agent_")
        assert code == 0, err
        assert "run.steered" in out and "approval.decided" in out and "by alice" in out
    assert ran == ["C3"]


async def test_a_prefix_that_cannot_work_is_refused_at_registration(
    client: Client, task_queue: str
) -> None:
    agent_input = AgentInput(prompt="nothing", config=AgentConfig(model="unused"))
    async with running_worker(client, ToolRegistry(), task_queue, workflows=[ClashingWorkflow]):
        refusals = await client.execute_workflow(
            ClashingWorkflow.run, agent_input, id=f"clash-{task_queue}", task_queue=task_queue
        )
    assert len(refusals) == 5
    empty, spaced, long, newline, twice = refusals
    assert "handlers named status already" in empty  # the host's own query is kept
    assert "only ASCII letters" in spaced and "only ASCII letters" in newline
    assert "at most 64 characters" in long
    assert "agent_decide" in twice


# ------------------------------------------------------- the three outside parties


class Location(BaseModel):
    lat: float
    lon: float


oauth = oauth_support.oauth  # the fixture, by the name the tests ask for


@pytest.fixture
async def pool() -> AsyncIterator[McpPool]:
    pool = McpPool(connect_timeout=20)
    yield pool
    await pool.aclose()


async def pausing_registry(pool: McpPool, tokens: list[str]) -> ToolRegistry:
    """A tool that needs the user's OAuth grant, a callback tool, and an MCP server's tool
    that asks the user a question."""
    registry = ToolRegistry()

    @registry.tool(read_only=True, oauth=OAuthRequirement(provider="fake", scopes=("read",)))
    def read_calendar(day: str, ctx: ToolContext) -> dict[str, Any]:
        """Read the user's calendar for a day."""
        assert ctx.access_token
        tokens.append(ctx.access_token)
        return {"day": day, "events": ["standup"]}

    registry.callback_tool(
        "get_location",
        description="Where the user's device is.",
        parameters={
            "type": "object",
            "properties": {"precise": {"type": "boolean"}},
            "required": ["precise"],
        },
        output=Location,
        timeout=60,
    )
    server = McpStdio(sys.executable, (ELICIT_SERVER,), name="ask", elicitation=True)
    await attach_mcp(registry, server, pool=pool)
    return registry


@pytest.mark.usefixtures("cli_env")
async def test_oauth_callbacks_and_questions_reach_an_embedded_loop(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    oauth: OAuthSetup,
    pool: McpPool,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, manager, _ = oauth
    tokens: list[str] = []
    located: list[bool] = []

    def get_location(precise: bool) -> Location:
        located.append(precise)
        return Location(lat=48.85, lon=2.35)

    script = write_script(
        tmp_path,
        [
            calls(("cal", "read_calendar", {"day": "friday"})),
            calls(("loc", "get_location", {"precise": True})),
            calls(("g1", "ask__greet", {"greeting": "hello"})),
            answer("all three done"),
        ],
    )
    agent_input = AgentInput(
        prompt="plan friday", config=AgentConfig(model=script), identity=Identity(user="alice")
    )
    registry = await pausing_registry(pool, tokens)
    async with running_worker(
        client,
        registry,
        task_queue,
        oauth=OAuthBroker(manager),
        workflows=[EmbeddingWorkflow],
    ):
        host = await client.start_workflow(
            EmbeddingWorkflow.run, agent_input, id=f"host-{task_queue}", task_queue=task_queue
        )
        # The OAuth callback signals `agent_authorization_completed` on the host.
        paused = await host_status(host, lambda s: bool(s.pending_authorizations))
        assert paused.status == RunStatus.AWAITING_AUTHORIZATION
        page = await open_link(paused.pending_authorizations[0].authorization_url)
        assert page.status_code == 200, page.text
        # The grant reached the waiting call: the tool ran, the next turn's callback waits.
        published = await host_status(
            host, lambda s: not s.pending_authorizations and bool(s.pending_callbacks)
        )
        assert [p.call_id for p in published.pending_callbacks] == ["loc"] and len(tokens) == 1

        # A callback client serves the host's `agent_pending_callbacks` until it ends.
        serving = asyncio.ensure_future(
            serve_callbacks(host, {"get_location": get_location}, prefix="agent_")
        )
        # The user answers the MCP server's question through `agent_answer_input` (the
        # CLI calls `answer_input(..., prefix=)`).
        asked = await host_status(host, lambda s: bool(s.pending_inputs))
        assert asked.pending_inputs[0].call_id == "g1"
        code, _, err = await cli(capsys, "answer", host.id, "g1", "--decline", "--prefix", "a b")
        assert code == 2 and "--prefix: a handler prefix holds only ASCII" in err
        code, out, err = await cli(
            capsys, "answer", host.id, "g1", "--accept", '{"name": "Ada"}', "--prefix", "agent_"
        )
        assert code == 0, err
        assert "accepted" in out

        assert await host.result() == "completed: all three done"
        assert await asyncio.wait_for(serving, 30) == 1
        final = await host.query("agent_status", result_type=RunSnapshot)
        await assert_not_wedged(host)
    assert len(tokens) == 1 and located == [True]
    assert final.status == RunStatus.COMPLETED and final.tool_calls == 3
