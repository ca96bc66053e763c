"""An MCP server over streamable HTTP that needs the user's OAuth token, end to end: the
run pauses for the user's grant, each user's calls go on a session of their own token, a
revoked token pauses the run again, and no token ever enters a history."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from mcp_support import SERVER, HttpServer, history_bytes
from temporalio.client import Client

from durable_tools import (
    DurableTools,
    Identity,
    NeedsAuthorization,
    OAuthRequirement,
    RunStatus,
    ToolContext,
    ToolExecutionError,
    ToolRegistrationError,
    ToolRegistry,
)
from durable_tools.oauth import (
    CallbackServer,
    OAuthBroker,
    OAuthManager,
    generate_key,
    run_notifier,
    serve_callback,
)
from durable_tools.sources import FromSecret, McpHttp, McpPool, McpStdio, attach_mcp
from support import (
    answer,
    assert_not_wedged,
    calls,
    free_port,
    running_worker,
    wait_for,
    write_script,
)

sys.path.insert(0, str(Path(__file__).parents[1] / "oauth"))
from fake_provider import FakeOAuthProvider

SERVICE_TOKEN = "service-token-for-discovery"


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()[:16]


@pytest.fixture
async def pool() -> AsyncIterator[McpPool]:
    pool = McpPool(connect_timeout=20)
    yield pool
    await pool.aclose()


@pytest.fixture
def tokens(tmp_path: Path) -> Path:
    rules = tmp_path / "tokens"
    rules.write_text(f"{SERVICE_TOKEN}\n")
    return rules


@pytest.fixture
async def guarded(tokens: Path) -> AsyncIterator[HttpServer]:
    server = HttpServer(tokens_file=tokens)
    await server.start()
    yield server
    server.kill()


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOAuthProvider]:
    monkeypatch.setenv("FAKE_OAUTH_CLIENT_SECRET", "test-secret")
    with FakeOAuthProvider() as provider:
        yield provider


@pytest.fixture
async def oauth(
    client: Client, tmp_path: Path, fake: FakeOAuthProvider
) -> AsyncIterator[OAuthManager]:
    port = free_port()
    manager = OAuthManager.from_data_dir(
        [fake.provider_config(redirect_uri=f"http://127.0.0.1:{port}/oauth/callback")],
        tmp_path,
        key=generate_key(),
    )
    on_complete, on_error = run_notifier(client)
    server: CallbackServer = await serve_callback(manager, on_complete, on_error, port=port)
    try:
        yield manager
    finally:
        await server.stop()


def web(url: str) -> McpHttp:
    # The worker's own token lists the tools; calls carry the user's token instead.
    return McpHttp(url, headers={"Authorization": FromSecret("mcp_svc", "Bearer {}")}, name="web")


async def authorize_in_browser(url: str) -> None:
    async with httpx.AsyncClient(follow_redirects=True, timeout=10) as browser:
        page = await browser.get(url)
    assert page.status_code == 200, page.text


def ctx(token: str | None) -> ToolContext:
    return ToolContext(tool_call_id="c1", tool_name="web__whoami", access_token=token)


async def test_calls_carry_the_users_token_on_a_session_of_its_own(
    pool: McpPool, guarded: HttpServer, tokens: Path
) -> None:
    registry = ToolRegistry()
    requirement = OAuthRequirement(provider="fake")
    await attach_mcp(
        registry,
        web(guarded.url),
        pool=pool,
        secrets={"mcp_svc": SERVICE_TOKEN},
        include=["whoami"],
        oauth=requirement,
    )
    assert registry.get("web__whoami").spec.oauth == requirement
    tokens.write_text(f"{SERVICE_TOKEN}\nalice-token\nbob-token\n")

    alice = await registry.invoke("web__whoami", {}, ctx("alice-token"))
    bob = await registry.invoke("web__whoami", {}, ctx("bob-token"))
    again = await registry.invoke("web__whoami", {}, ctx("alice-token"))
    assert alice.content[0].text == again.content[0].text == digest("alice-token")
    assert bob.content[0].text == digest("bob-token")
    assert pool.connects["web"] == 3  # discovery, alice, bob: alice's session was reused

    with pytest.raises(NeedsAuthorization):  # no grant: the run would pause for one
        await registry.invoke("web__whoami", {}, ctx(None))
    with pytest.raises(NeedsAuthorization) as rejected:  # the server says 401
        await registry.invoke("web__whoami", {}, ctx("mallory-token"))
    assert "HTTP 401" in rejected.value.message and "mallory" not in rejected.value.message

    # Revoked while its session is open: the next call pauses for a new grant too.
    tokens.write_text(f"{SERVICE_TOKEN}\nbob-token\n-alice-token\n")
    with pytest.raises(NeedsAuthorization):
        await registry.invoke("web__whoami", {}, ctx("alice-token"))


async def test_worker_credentials_rejected_and_oauth_over_stdio_refused(
    pool: McpPool, guarded: HttpServer
) -> None:
    with pytest.raises(ToolExecutionError) as refused:
        await attach_mcp(ToolRegistry(), web(guarded.url), pool=pool, secrets={"mcp_svc": "wrong"})
    assert not refused.value.retryable and "HTTP 401" in refused.value.message
    assert "wrong" not in refused.value.message
    with pytest.raises(ToolRegistrationError, match="stdio"):
        await attach_mcp(
            ToolRegistry(),
            McpStdio(sys.executable, (SERVER, "stdio"), name="calc"),
            pool=pool,
            oauth=OAuthRequirement(provider="fake"),
        )


async def test_a_run_pauses_for_the_users_grant_and_again_when_it_is_revoked(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    pool: McpPool,
    guarded: HttpServer,
    tokens: Path,
    fake: FakeOAuthProvider,
    oauth: OAuthManager,
) -> None:
    registry = ToolRegistry()
    await attach_mcp(
        registry,
        web(guarded.url),
        pool=pool,
        secrets={"mcp_svc": SERVICE_TOKEN},
        include=["whoami"],
        oauth=OAuthRequirement(provider="fake", scopes=("read",)),
    )
    tokens.write_text(f"{SERVICE_TOKEN}\n*\n")  # any token the provider issued
    identity = Identity(tenant="acme", user="alice")
    step = calls(("w1", "web__whoami", {}))
    dt = DurableTools(client, task_queue)
    async with running_worker(client, registry, task_queue, oauth=OAuthBroker(oauth)):
        run = await dt.start(
            "who am I?", model=write_script(tmp_path, [step, answer("done")]), identity=identity
        )
        snapshot = await wait_for(run, lambda s: bool(s.pending_authorizations))
        assert snapshot.status == RunStatus.AWAITING_AUTHORIZATION
        assert snapshot.pending_authorizations[0].tool == "web__whoami"
        await authorize_in_browser(snapshot.pending_authorizations[0].authorization_url)
        first = await run.result()
        first_reply = next(m.content for m in await run.conversation() if m.role == "tool")
        await assert_not_wedged(run.handle)
        assert first.status == RunStatus.COMPLETED
        [issued] = fake.access_tokens
        assert first_reply == digest(issued)  # the call carried the user's token

        # The server stops accepting that token: the next run pauses again, not fails.
        tokens.write_text(f"{SERVICE_TOKEN}\n*\n-{issued}\n")
        fake.revoke_all()
        second = await dt.start(
            "again", model=write_script(tmp_path, [step, answer("re-granted")]), identity=identity
        )
        snapshot = await wait_for(second, lambda s: bool(s.pending_authorizations))
        await authorize_in_browser(snapshot.pending_authorizations[0].authorization_url)
        result = await second.result()
        reply = next(m.content for m in await second.conversation() if m.role == "tool")
        events = [e.event for e in await second.events()]
        await assert_not_wedged(second.handle)
    assert result.status == RunStatus.COMPLETED and result.final_answer == "re-granted"
    assert len(fake.access_tokens) == 2 and reply == digest(fake.access_tokens[1])
    assert "tool.unauthorized" in events
    for handle in (run.handle, second.handle):
        recorded = history_bytes(await handle.fetch_history())
        assert b"w1" in recorded  # the decoding works: the call id is there
        for secret in {*fake.access_tokens, *fake.refresh_tokens, SERVICE_TOKEN}:
            assert secret.encode() not in recorded
