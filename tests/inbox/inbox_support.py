"""Shared pieces of the inbox tests: a tokens file, the app, a run waiting for approval."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from temporalio.client import Client

from durable_tools.client import AgentRun, DurableTools
from durable_tools.inbox import AuthConfig, InboxConfig, TokenStore, add_token, create_app
from durable_tools.tools import ToolRegistry
from durable_tools.workflows import AgentConfig, ApprovalPolicy, PendingApproval
from support import answer, calls, wait_for, write_script


def pay_registry() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(approval=True, idempotent=True, redact=("card",))
    def pay(amount_cents: int, memo: str = "", card: str = "") -> str:
        """Pay an amount (needs approval)."""
        return f"paid {amount_cents}"

    return registry


@dataclass
class Users:
    """A tokens file with alice (group ops) and bob (no groups), and their tokens."""

    path: Path
    alice: str
    bob: str

    def store(self) -> TokenStore:
        return TokenStore(self.path)


def make_users(directory: Path) -> Users:
    path = directory / "tokens.json"
    alice = add_token(path, "alice", ["ops"])
    bob = add_token(path, "bob")
    return Users(path, alice, bob)


def make_app(client: Client, task_queue: str, users: Users, *, trusted: Sequence[str] = ()) -> Any:
    config = InboxConfig(
        auth=AuthConfig(users.store(), trusted_proxies=tuple(trusted)),
        session_secret="test-secret-" + uuid.uuid4().hex,
        registry=pay_registry(),
        refresh_seconds=1,
    )
    return create_app(DurableTools(client, task_queue), config)


async def start_pending(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    *,
    arguments: dict[str, Any] | None = None,
    deciders: tuple[str, ...] = (),
    agent: str | None = None,
) -> tuple[AgentRun, PendingApproval, str]:
    """Start a run that asks to `pay`, wait until it waits (also in the search attributes).

    Returns the run, its pending approval and the (unique) agent name.
    """
    agent = agent or f"agent-{uuid.uuid4().hex[:8]}"
    model = write_script(
        tmp_path,
        [calls(("c1", "pay", arguments or {"amount_cents": 500, "memo": "lunch"})), answer("done")],
    )
    config = AgentConfig(name=agent, model=model, approval=ApprovalPolicy(deciders=deciders))
    tools = DurableTools(client, task_queue)
    run = await tools.start("pay for lunch", config=config)
    snapshot = await wait_for(run, lambda s: bool(s.pending_approvals))
    for _ in range(200):  # visibility is eventually consistent
        if any(s.run_id == run.run_id for s in await tools.pending()):
            break
        await asyncio.sleep(0.1)
    else:
        raise AssertionError("the run never showed up as pending in the search attributes")
    return run, snapshot.pending_approvals[0], agent


async def decisions_sent(run: AgentRun) -> list[dict[str, Any]]:
    """The decisions the run accepted, as they were sent (from its history)."""
    history = await run.handle.fetch_history()
    sent = []
    for event in history.events:
        if event.HasField("workflow_execution_update_accepted_event_attributes"):
            request = event.workflow_execution_update_accepted_event_attributes.accepted_request
            sent.append(json.loads(request.input.args.payloads[0].data))
    return sent
