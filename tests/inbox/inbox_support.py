"""Shared pieces of the inbox tests: a tokens file, the app, a run waiting for approval, and
a client that signs in and posts the app's forms with their CSRF token."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from temporalio.client import Client

from durable_tools import (
    AgentConfig,
    AgentRun,
    ApprovalPolicy,
    DurableTools,
    PendingApproval,
    RunStatus,
    ToolRegistry,
)
from durable_tools.inbox import (
    AuthConfig,
    InboxConfig,
    InboxServer,
    TokenStore,
    add_token,
    create_app,
)
from support import (
    answer,
    assert_not_wedged,
    calls,
    decisions_sent,
    running_worker,
    wait_for,
    write_script,
)

_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


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


def make_app(
    client: Client,
    task_queue: str,
    users: Users,
    *,
    trusted: Sequence[str] = (),
    session_secret: str | None = None,
    **options: Any,
) -> Any:
    """The inbox app for `users`; `options` are further `InboxConfig` fields."""
    config = InboxConfig(
        auth=AuthConfig(users.store(), trusted_proxies=tuple(trusted)),
        session_secret=session_secret or "test-secret-" + uuid.uuid4().hex,
        registry=pay_registry(),
        refresh_seconds=1,
        **options,
    )
    return create_app(DurableTools(client, task_queue), config)


@asynccontextmanager
async def served(app: Any) -> AsyncIterator[InboxServer]:
    """`app` served by uvicorn on a free port of 127.0.0.1 for the block."""
    server = InboxServer(app, port=0)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def raw_exchange(port: int, request: bytes, timeout: float = 30) -> bytes:
    """Send `request` bytes to 127.0.0.1:`port` and read until the server closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(request)
        await writer.drain()
        return await asyncio.wait_for(reader.read(), timeout)
    finally:
        writer.close()


async def start_pending(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    *,
    arguments: dict[str, Any] | None = None,
    deciders: tuple[str, ...] = (),
    agent: str | None = None,
    then: list[dict[str, Any]] | None = None,
) -> tuple[AgentRun, PendingApproval, str]:
    """Start a run that asks to `pay`, wait until it waits (also in the search attributes).

    `then` is what the model does after the call (default: answer "done").
    Returns the run, its pending approval and the (unique) agent name.
    """
    agent = agent or f"agent-{uuid.uuid4().hex[:8]}"
    first = calls(("c1", "pay", arguments or {"amount_cents": 500, "memo": "lunch"}))
    model = write_script(tmp_path, [first, *(then or [answer("done")])])
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


@asynccontextmanager
async def pending_call(
    client: Client, task_queue: str, tmp_path: Path, **start: Any
) -> AsyncIterator[tuple[Users, AgentRun, PendingApproval, str]]:
    """The users of `make_users`, a worker for `pay_registry`, and a run waiting for
    approval of `pay` (`start_pending`, which takes `start`), for the block.

    Yields the users, the run, its pending approval and the agent name.
    """
    users = make_users(tmp_path)
    async with running_worker(client, pay_registry(), task_queue):
        run, approval, agent = await start_pending(client, task_queue, tmp_path, **start)
        yield users, run, approval, agent


async def cancel_and_check(run: AgentRun) -> None:
    """End a run the test left waiting, and check its workflow task never looped."""
    await run.cancel("test over")
    await run.result()
    await assert_not_wedged(run.handle)


async def assert_undecided_then_cancel(run: AgentRun) -> None:
    """Check no decision reached the run and it still waits; then end it (`cancel_and_check`)."""
    assert await decisions_sent(run) == []
    assert (await run.status()).status == RunStatus.AWAITING_APPROVAL
    await cancel_and_check(run)


def http(app: object, peer: str = "127.0.0.1") -> httpx.AsyncClient:
    """A client for the app in-process, as if connecting from `peer`."""
    transport = httpx.ASGITransport(app=app, client=(peer, 40000))  # type: ignore[arg-type]
    return httpx.AsyncClient(transport=transport, base_url="http://inbox.test")


def csrf_token(html: str) -> str:
    """The CSRF token of the form on a page (fails the test when there is none)."""
    found = _CSRF.search(html)
    assert found is not None, "no csrf_token field on the page"
    return found.group(1)


async def login(browser: httpx.AsyncClient, token: str) -> None:
    """Sign in through the login form with `token`."""
    page = await browser.get("/login")
    signed_in = await browser.post(
        "/login", data={"csrf_token": csrf_token(page.text), "token": token, "next": "/"}
    )
    assert signed_in.status_code == 303, signed_in.text


async def sign_in(page: Any, url: str, token: str) -> None:
    """Sign a chromium `page` in to the inbox at `url` with `token`, done once the login
    answers: without waiting for the unfiltered pending page it leads to, which asks every
    run waiting on the server (on the shared dev server of the tests, other tests' runs
    too, their workers gone). The caller goes to the page it needs next."""
    await page.goto(f"{url}/login")
    await page.fill("#token", token)
    async with page.expect_response(
        lambda r: r.url.endswith("/login") and r.request.method == "POST"
    ) as posted:
        await page.click("#sign-in", no_wait_after=True)
    assert (await posted.value).status == 303, "the inbox refused the token"


async def decide_by_form(
    browser: httpx.AsyncClient,
    run_id: str,
    call_id: str,
    fields: dict[str, str],
    *,
    headers: dict[str, str] | None = None,
) -> tuple[str, httpx.Response]:
    """Open a call's page and post its decision form with the page's CSRF token.

    Returns the page's HTML and the answer to the post.
    """
    url = f"/runs/{run_id}/calls/{call_id}"
    page = await browser.get(url, headers=headers)
    data = {"csrf_token": csrf_token(page.text), **fields}
    return page.text, await browser.post(f"{url}/decide", data=data, headers=headers)
