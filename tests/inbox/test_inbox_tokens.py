"""Inbox users: tokens stored only as hashes, the CLI that makes them and decides with them,
sessions that end when a user is removed, login that cannot be turned into an open
redirect, and the OAuth callback hosted by the same app."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import httpx
import pytest
from inbox_support import csrf_token, make_app, make_users, pending_call, served
from temporalio.client import Client

import cli_support
from cli_support import cli
from durable_tools import DurableTools
from durable_tools._callers._tokens import hash_token
from durable_tools.cli import main
from durable_tools.inbox import (
    AuthConfig,
    InboxConfig,
    InboxServer,
    TokenFileError,
    TokenStore,
    add_token,
    create_app,
)
from durable_tools.oauth import make_callback_app
from oauth.fake_provider import FakeOAuthProvider
from oauth_support import CLIENT_SECRET_ENV, manager_for
from support import assert_not_wedged, decisions_sent, free_port

cli_env = cli_support.cli_env  # the fixture, by the name the tests ask for


def test_only_the_hash_is_stored(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    token = add_token(path, "alice", ["ops"])
    text = path.read_text()
    assert token not in text and hash_token(token) in text
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    store = TokenStore(path)
    found = store.user_for(token)
    assert found is not None and (found.name, found.groups) == ("alice", ("ops",))
    assert store.user_for(token + "x") is None and store.user_for("") is None
    # A new token replaces the old one and keeps the groups.
    newer = add_token(path, "alice")
    assert store.user_for(token) is None
    again = store.user_for(newer)
    assert again is not None and again.groups == ("ops",)
    with pytest.raises(TokenFileError, match="invalid user"):
        add_token(path, "<bob>")
    with pytest.raises(TokenFileError, match="invalid group"):
        add_token(path, "bob", ["a b"])


def test_cli_prints_a_new_token_once(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "tokens.json"
    code = main(["inbox", "token", "add", "carol", "--group", "ops", "--tokens-file", str(path)])
    assert code == 0
    out, err = capsys.readouterr()
    token = out.strip()
    assert token and token not in path.read_text() and token not in err
    assert json.loads(path.read_text())["users"]["carol"]["groups"] == ["ops"]
    found = TokenStore(path).user_for(token)
    assert found is not None and found.name == "carol"


async def test_sessions_end_when_the_user_is_removed_and_login_stays_local(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    users = make_users(tmp_path)
    config = InboxConfig(auth=AuthConfig(users.store()), session_secret="s" * 32)
    app = create_app(DurableTools(client, task_queue), config)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://inbox.test") as browser:
        csrf = csrf_token((await browser.get("/login")).text)
        wrong = {"csrf_token": csrf, "token": "guess", "next": "/"}
        assert (await browser.post("/login", data=wrong)).status_code == 401
        no_csrf = {"token": users.bob, "next": "/"}
        assert (await browser.post("/login", data=no_csrf)).status_code == 403
        fields = {"csrf_token": csrf, "token": users.bob, "next": "//evil.example/"}
        answer = await browser.post("/login", data=fields)
        assert answer.status_code == 303 and answer.headers["location"] == "/"
        assert (await browser.get("/api/pending")).json()["user"] == "bob"
        data = json.loads(users.path.read_text())
        del data["users"]["bob"]
        users.path.write_text(json.dumps(data))
        assert (await browser.get("/api/pending")).status_code == 401


async def test_the_oauth_callback_is_served_by_the_inbox(
    client: Client, task_queue: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CLIENT_SECRET_ENV, "test-secret")
    users = make_users(tmp_path)
    completed: list[Any] = []
    # The callback's port must be known before the provider config (its redirect_uri).
    port = free_port()
    with FakeOAuthProvider() as fake:
        manager = manager_for(fake, tmp_path, port)
        config = InboxConfig(
            auth=AuthConfig(users.store()),
            session_secret="s" * 32,
            oauth=make_callback_app(manager, completed.append),
        )
        server = InboxServer(create_app(DurableTools(client, task_queue), config), port=port)
        await server.start()
        try:
            request = await manager.begin_authorization("fake", "alice", ["read"], "wf-1", "c-7")
            async with httpx.AsyncClient(follow_redirects=True) as browser:
                page = await browser.get(request.url)
                assert page.status_code == 200, page.text
                assert "Authorization complete" in page.text
                assert page.headers["cache-control"] == "no-store"
                replay = await browser.get(str(page.url))
                assert replay.status_code == 400 and "already used" in replay.text
        finally:
            await server.stop()
    [done] = completed
    assert (done.workflow_id, done.call_id, done.user) == ("wf-1", "c-7", "alice")


async def test_cli_decides_through_the_inbox_with_its_token(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    cli_env: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with pending_call(client, task_queue, tmp_path) as (users, run, approval, _):
        config = InboxConfig(auth=AuthConfig(users.store()), session_secret="s" * 32)
        server = InboxServer(create_app(DurableTools(client, task_queue), config), port=0)
        await server.start()
        try:
            args = ["approve", run.run_id, "c1", "--inbox", server.url, "--reason", "fine"]
            args += ["--hash", approval.arguments_hash]
            monkeypatch.setenv("DURABLE_TOOLS_INBOX_TOKEN", "not-a-token")
            code, _, err = await cli(capsys, *args)
            assert code == 2 and "HTTP 401" in err
            monkeypatch.setenv("DURABLE_TOOLS_INBOX_TOKEN", users.bob)
            code, _, err = await cli(capsys, *args, "--as", "mallory")
            assert code == 2 and "--as does not apply" in err
            code, out, err = await cli(capsys, *args)
            assert code == 0, err
            assert "as bob" in out and approval.arguments_hash in out
        finally:
            await server.stop()
        await run.result()
        [sent] = await decisions_sent(run)
        assert (sent["decider"], sent["reason"]) == ("bob", "fine")
        assert sent["arguments_hash"] == approval.arguments_hash
        await assert_not_wedged(run.handle)


async def test_a_tokens_file_made_unusable_while_serving_answers_503_and_says_so(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # An operator's hand edit adds `Alice` beside `alice` (one person to every policy):
    # the inbox refuses everyone, saying why in one line, naming nobody.
    users = make_users(tmp_path)
    async with (
        served(make_app(client, task_queue, users)) as server,
        httpx.AsyncClient(base_url=server.url, timeout=60) as http_client,
    ):
        bearer = {"Authorization": f"Bearer {users.alice}"}
        assert (await http_client.get("/api/pending", headers=bearer)).status_code == 200
        written = json.loads(users.path.read_text())
        written["users"]["Alice"] = dict(written["users"]["alice"], token_sha256="0" * 64)
        users.path.write_text(json.dumps(written))
        api = await http_client.get("/api/pending", headers=bearer)
        page = await http_client.get("/", headers=bearer)
    assert api.status_code == 503 and "tokens file" in api.json()["error"], api.text
    assert page.status_code == 503 and "tokens file" in page.text, page.text
    for answer in (api.text, page.text):
        assert "alice" not in answer.lower() and str(users.path) not in answer
