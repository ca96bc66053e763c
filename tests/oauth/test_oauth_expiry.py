"""OAuth pauses that cannot hang, on a real dev server with the fake provider over HTTP.

An authorization wait has a deadline and a policy (deny, fail, re-issue); an expired link
can be re-issued (`durable-tools auth reissue RUN CALL`), a late click on the old one says
so, and `durable-tools pending` shows when each link expires.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.client import Client, WorkflowUpdateFailedError

import cli_support
from cli_support import cli, cli_json
from durable_tools import (
    AgentConfig,
    AuthorizationPolicy,
    DurableTools,
    Identity,
    OAuthRequirement,
    RunStatus,
    ToolContext,
    ToolRegistry,
)
from durable_tools.inbox import AuthConfig, InboxConfig, TokenStore, add_token, create_app
from durable_tools.oauth import OAuthBroker
from oauth_support import Clock, OAuthSetup, open_link, serving_callback
from support import answer, assert_not_wedged, calls, running_worker, wait_for, write_script

cli_env = cli_support.cli_env  # the fixture, by the name the tests ask for


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def oauth(
    client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: Clock
) -> AsyncIterator[OAuthSetup]:
    async with serving_callback(client, tmp_path / "oauth", monkeypatch, now=clock) as setup:
        yield setup


def calendar(ran: list[str]) -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(read_only=True, oauth=OAuthRequirement(provider="fake", scopes=("read",)))
    def read_calendar(day: str, ctx: ToolContext) -> dict[str, Any]:
        """Read the user's calendar for a day."""
        ran.append(day)
        return {"day": day, "events": ["standup"]}

    return registry


def script(tmp_path: Path) -> str:
    return write_script(
        tmp_path, [calls(("cal1", "read_calendar", {"day": "monday"})), answer("done")]
    )


async def test_an_expired_link_is_reissued_from_the_cli_and_completes_the_run(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    oauth: OAuthSetup,
    clock: Clock,
    cli_env: str,
    capsys: Any,
) -> None:
    fake, manager, _ = oauth
    ran: list[str] = []
    async with running_worker(client, calendar(ran), task_queue, oauth=OAuthBroker(manager)):
        run = await DurableTools(client, task_queue).start(
            "monday?", model=script(tmp_path), identity=Identity(user="alice")
        )
        snapshot = await wait_for(run, lambda s: bool(s.pending_authorizations))
        first = snapshot.pending_authorizations[0]
        assert first.expires_at == clock.now + manager.state_ttl
        assert first.deadline is None and first.issued == 1

        # `pending` shows the link's expiry and the command for a new one.
        code, out, err = await cli(capsys, "pending")
        assert code == 0, err
        assert f"link expires {first.expires_at.isoformat(timespec='seconds')}" in out
        assert f"durable-tools auth reissue {run.run_id} cal1" in out
        listed = await cli_json(capsys, "pending")
        assert listed[0]["authorizations"][0]["expires_at"] is not None

        # The link expires; a late click says what to do, and grants nothing.
        clock.advance(manager.state_ttl.total_seconds() + 1)
        late = await open_link(first.authorization_url)
        assert late.status_code == 410
        assert f"durable-tools auth reissue {run.run_id} cal1" in late.text
        assert ran == []
        assert (await run.status()).status is RunStatus.AWAITING_AUTHORIZATION

        # A fresh link, from the command line.
        code, out, err = await cli(capsys, "auth", "reissue", run.run_id, "cal1")
        assert code == 0, err
        renewed = (await run.status()).pending_authorizations[0]
        assert renewed.issued == 2
        assert renewed.authorization_url != first.authorization_url
        assert renewed.authorization_url in out
        assert renewed.expires_at == clock.now + manager.state_ttl

        page = await open_link(renewed.authorization_url)
        assert page.status_code == 200, page.text
        result = await run.result()
        await assert_not_wedged(run.handle)
        events = [e.event for e in await run.events()]
    assert result.status is RunStatus.COMPLETED and ran == ["monday"]
    assert events.count("authorization.reissued") == 1
    assert "authorization.completed" in events
    assert fake.count("authorization_code") == 1


async def test_reissue_is_refused_for_a_call_that_waits_on_nothing(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    oauth: OAuthSetup,
    cli_env: str,
    capsys: Any,
) -> None:
    _, manager, _ = oauth
    async with running_worker(client, calendar([]), task_queue, oauth=OAuthBroker(manager)):
        run = await DurableTools(client, task_queue).start(
            "monday?", model=script(tmp_path), identity=Identity(user="alice")
        )
        await wait_for(run, lambda s: bool(s.pending_authorizations))
        for hostile in ("nope", "", 123, None, ["cal1"]):
            with pytest.raises(WorkflowUpdateFailedError):
                await run.handle.execute_update("reissue_authorization", hostile)
        code, _, err = await cli(capsys, "auth", "reissue", run.run_id, "x" * 5000)
        assert code == 2 and "rejected" in err
        await run.cancel()
        await run.result()
        await assert_not_wedged(run.handle)


async def test_deadline_reissues_then_tells_the_model(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    oauth: OAuthSetup,
) -> None:
    _, manager, _ = oauth
    ran: list[str] = []
    config = AgentConfig(
        model=script(tmp_path),
        authorization=AuthorizationPolicy(timeout_seconds=1, on_timeout="reissue", max_reissues=1),
    )
    async with running_worker(client, calendar(ran), task_queue, oauth=OAuthBroker(manager)):
        run = await DurableTools(client, task_queue).start(
            "monday?", config=config, identity=Identity(user="alice")
        )
        result = await run.result()
        await assert_not_wedged(run.handle)
        events = [e.event for e in await run.events()]
        reply = next(m.content for m in await run.conversation() if m.role == "tool") or ""
    assert result.status is RunStatus.COMPLETED and ran == []
    waits = [e for e in events if e.startswith("authorization.")]
    assert waits == [
        "authorization.requested",
        "authorization.expired",
        "authorization.reissued",
        "authorization.expired",
        "authorization.failed",
    ]
    assert "no authorization before the deadline" in reply


async def test_deadline_can_fail_the_run(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    oauth: OAuthSetup,
) -> None:
    _, manager, _ = oauth
    config = AgentConfig(
        model=script(tmp_path),
        authorization=AuthorizationPolicy(timeout_seconds=1, on_timeout="fail"),
    )
    async with running_worker(client, calendar([]), task_queue, oauth=OAuthBroker(manager)):
        run = await DurableTools(client, task_queue).start(
            "monday?", config=config, identity=Identity(user="alice")
        )
        result = await run.result()
        await assert_not_wedged(run.handle)
    assert result.status is RunStatus.FAILED
    assert "cal1" in (result.reason or "") and "deadline" in (result.reason or "")


def test_policy_refuses_a_deadline_action_without_a_deadline() -> None:
    with pytest.raises(ValueError):
        AuthorizationPolicy(on_timeout="reissue")
    with pytest.raises(ValueError):
        AuthorizationPolicy(on_timeout="fail")


async def test_the_inbox_reissues_a_link_for_a_waiting_call(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    oauth: OAuthSetup,
    clock: Clock,
) -> None:
    _, manager, _ = oauth
    tokens = tmp_path / "tokens.json"
    token = add_token(tokens, "alice")
    app = create_app(
        DurableTools(client, task_queue),
        InboxConfig(auth=AuthConfig(TokenStore(tokens)), session_secret="s-" + task_queue),
    )
    bearer = {"Authorization": f"Bearer {token}"}
    async with running_worker(client, calendar([]), task_queue, oauth=OAuthBroker(manager)):
        run = await DurableTools(client, task_queue).start(
            "monday?", model=script(tmp_path), identity=Identity(user="alice")
        )
        snapshot = await wait_for(run, lambda s: bool(s.pending_authorizations))
        first = snapshot.pending_authorizations[0]
        transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
        async with httpx.AsyncClient(transport=transport, base_url="http://inbox.test") as web:
            page = await web.get(f"/runs/{run.run_id}", headers=bearer)
            assert page.status_code == 200 and "New link" in page.text
            answered = await web.post(f"/runs/{run.run_id}/calls/cal1/reissue", headers=bearer)
            assert answered.status_code == 303, answered.text
            # A call that waits on nothing: refused, and said why.
            refused = await web.post(f"/runs/{run.run_id}/calls/nope/reissue", headers=bearer)
            assert refused.status_code == 409
        renewed = (await run.status()).pending_authorizations[0]
        await run.cancel("done")
        await assert_not_wedged(run.handle)
    assert renewed.issued == 2 and renewed.authorization_url != first.authorization_url
