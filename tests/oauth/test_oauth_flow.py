"""The OAuth core against a fake provider that is a real HTTP server."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from durable_tools import NeedsAuthorization, oauth
from durable_tools.oauth import (
    ExpiredState,
    FileStateStore,
    FileTokenStore,
    InvalidState,
    MemoryStateStore,
    MemoryTokenStore,
    OAuthConfigError,
    OAuthManager,
    OAuthProvider,
    ProviderRegistry,
    TokenEndpointError,
    TokenKeyError,
    UnknownProvider,
    generate_key,
    load_providers,
)
from durable_tools.oauth._pkce import code_challenge, new_code_verifier
from oauth.fake_provider import FakeOAuthProvider
from oauth_support import Clock


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    value = generate_key()
    monkeypatch.setenv("DURABLE_TOOLS_TOKEN_KEY", value)
    return value


@pytest.fixture
def clock() -> Clock:
    return Clock(datetime(2030, 1, 1, tzinfo=UTC))


@pytest.fixture
def manager(fake: FakeOAuthProvider, key: str, tmp_path: Path, clock: Clock) -> OAuthManager:
    return OAuthManager.from_data_dir([fake.provider_config()], tmp_path, now=clock)


async def authorize(
    manager: OAuthManager,
    fake: FakeOAuthProvider,
    user: str = "alice",
    scopes: tuple[str, ...] = ("read", "write"),
) -> oauth.CompletedAuthorization:
    """Begin, let the fake approve (as its /authorize would), and complete."""
    request = await manager.begin_authorization("fake", user, scopes, "wf-1", "call-1")
    query = parse_qs(urlsplit(request.url).query)
    code = fake.issue_code(
        query["code_challenge"][0], tuple(query["scope"][0].split()), query["redirect_uri"][0]
    )
    return await manager.complete_authorization(request.state, code)


def test_exports() -> None:
    assert sorted(oauth.__all__) == sorted(
        name for name in dir(oauth) if not name.startswith("_") and name not in {"annotations"}
    )


def test_pkce() -> None:
    verifier = new_code_verifier()
    assert 43 <= len(verifier) <= 128
    assert len(new_code_verifier(32)) == 43
    assert len(new_code_verifier(96)) == 128
    expected = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=")
    assert code_challenge(verifier) == expected.decode()
    assert "=" not in code_challenge(verifier)
    # RFC 7636 appendix B.
    assert (
        code_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
        == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    )


def test_providers_from_toml_and_json(tmp_path: Path) -> None:
    toml = tmp_path / "providers.toml"
    toml.write_text(
        """
[providers.github]
authorize_url = "https://github.com/login/oauth/authorize"
token_url = "https://github.com/login/oauth/access_token"
client_id = "abc"
client_secret_env = "GITHUB_CLIENT_SECRET"
redirect_uri = "http://127.0.0.1:8765/oauth/callback"
scopes = ["repo"]
extra_authorize_params = { allow_signup = "false" }
"""
    )
    registry = load_providers(toml)
    assert registry.names() == ["github"]
    assert registry.get("github").extra_authorize_params == {"allow_signup": "false"}

    as_json = tmp_path / "providers.json"
    as_json.write_text(json.dumps({"providers": [registry.get("github").model_dump()]}))
    assert load_providers(as_json).get("github") == registry.get("github")

    with pytest.raises(UnknownProvider, match="known: github"):
        registry.get("gitlab")


def test_provider_config_refuses_inline_secret(tmp_path: Path) -> None:
    bad = tmp_path / "p.json"
    bad.write_text(
        json.dumps(
            {
                "providers": {
                    "x": {
                        "authorize_url": "https://x/a",
                        "token_url": "https://x/t",
                        "client_id": "c",
                        "client_secret": "hunter2",
                        "redirect_uri": "http://127.0.0.1/cb",
                    }
                }
            }
        )
    )
    with pytest.raises(OAuthConfigError, match="client_secret_env") as info:
        load_providers(bad)
    assert "hunter2" not in str(info.value)


def test_missing_client_secret_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOPE_SECRET", raising=False)
    provider = OAuthProvider(
        name="p",
        authorize_url="https://p/a",
        token_url="https://p/t",
        client_id="c",
        client_secret_env="NOPE_SECRET",
        redirect_uri="http://127.0.0.1/cb",
    )
    with pytest.raises(OAuthConfigError, match="NOPE_SECRET"):
        provider.client_secret()


def test_missing_or_malformed_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("DURABLE_TOOLS_TOKEN_KEY", raising=False)
    with pytest.raises(TokenKeyError, match="DURABLE_TOOLS_TOKEN_KEY is not set"):
        FileTokenStore(tmp_path / "t.enc")
    monkeypatch.setenv("DURABLE_TOOLS_TOKEN_KEY", "not-a-key")
    with pytest.raises(TokenKeyError, match="not a valid Fernet key") as info:
        FileTokenStore(tmp_path / "t.enc")
    assert "not-a-key" not in str(info.value)
    FileTokenStore(tmp_path / "t.enc", generate_key())  # an explicit key needs no env


async def test_authorization_url(manager: OAuthManager, fake: FakeOAuthProvider) -> None:
    request = await manager.begin_authorization(
        "fake", "alice", ["read", "write"], "wf-1", "call-1"
    )
    url = urlsplit(request.url)
    assert f"{url.scheme}://{url.netloc}{url.path}" == f"{fake.base_url}/authorize"
    query = {k: v[0] for k, v in parse_qs(url.query).items()}
    assert query["response_type"] == "code"
    assert query["client_id"] == "test-client"
    assert query["code_challenge_method"] == "S256"
    assert len(query["code_challenge"]) == 43
    assert query["state"] == request.state
    assert query["scope"] == "read write"
    assert query["redirect_uri"] == "http://127.0.0.1:8765/oauth/callback"
    assert "code_verifier" not in query
    assert "verifier" not in request.model_dump_json()
    assert request.expires_at - manager._now() == timedelta(minutes=15)

    # No scopes asked: the provider's default ones.
    default = await manager.begin_authorization("fake", "bob", [], "wf-2", "call-2")
    assert parse_qs(urlsplit(default.url).query)["scope"] == ["read"]


async def test_round_trip_and_grants(manager: OAuthManager, fake: FakeOAuthProvider) -> None:
    assert await manager.get_grant("alice", "fake", ["read"]) is None
    done = await authorize(manager, fake)
    assert (done.workflow_id, done.call_id, done.user, done.provider) == (
        "wf-1",
        "call-1",
        "alice",
        "fake",
    )
    assert done.grant_ref.startswith("grant_")
    assert fake.access_tokens[-1] not in done.model_dump_json()

    grant = await manager.get_grant("alice", "fake", ["read"])
    assert grant is not None and grant.grant_ref == done.grant_ref and grant.refreshable
    assert await manager.get_grant("alice", "fake", ["admin"]) is None  # not a subset
    assert await manager.get_grant("bob", "fake", ["read"]) is None
    assert await manager.access_token("alice", "fake", ["write"]) == fake.access_tokens[-1]
    assert fake.count("authorization_code") == 1

    # The token endpoint got the full code exchange.
    form = fake.requests[0]
    assert form["grant_type"] == "authorization_code"
    assert form["client_secret"] == "test-secret"
    assert form["redirect_uri"] == "http://127.0.0.1:8765/oauth/callback"

    # A second authorization for more scopes keeps the old ones.
    request = await manager.begin_authorization("fake", "alice", ["admin"], "wf-1", "call-2")
    assert parse_qs(urlsplit(request.url).query)["scope"] == ["admin read write"]

    assert await manager.revoke("alice", "fake")
    assert fake.revocations  # told the provider (best effort)
    assert await manager.get_grant("alice", "fake") is None
    assert not await manager.revoke("alice", "fake")
    with pytest.raises(NeedsAuthorization) as info:
        await manager.access_token("alice", "fake", ["read"])
    assert info.value.details == {"user": "alice", "provider": "fake", "scopes": ["read"]}


async def test_state_is_single_use(manager: OAuthManager, fake: FakeOAuthProvider) -> None:
    request = await manager.begin_authorization("fake", "alice", ["read"], "wf-1", "call-1")
    challenge = parse_qs(urlsplit(request.url).query)["code_challenge"][0]
    await manager.complete_authorization(request.state, fake.issue_code(challenge))
    with pytest.raises(InvalidState, match="unknown or already used"):
        await manager.complete_authorization(request.state, fake.issue_code(challenge))
    with pytest.raises(InvalidState):
        await manager.complete_authorization("made-up", "code")


async def test_state_expires(manager: OAuthManager, fake: FakeOAuthProvider, clock: Clock) -> None:
    request = await manager.begin_authorization("fake", "alice", ["read"], "wf-1", "call-1")
    challenge = parse_qs(urlsplit(request.url).query)["code_challenge"][0]
    clock.advance(15 * 60 + 1)
    with pytest.raises(ExpiredState) as info:
        await manager.complete_authorization(request.state, fake.issue_code(challenge))
    assert info.value.pending is not None and info.value.pending.workflow_id == "wf-1"
    with pytest.raises(InvalidState):  # and it is gone
        await manager.complete_authorization(request.state, fake.issue_code(challenge))
    assert fake.count("authorization_code") == 0


async def test_wrong_verifier_rejected(manager: OAuthManager, fake: FakeOAuthProvider) -> None:
    request = await manager.begin_authorization("fake", "alice", ["read"], "wf-1", "call-1")
    # A code bound to another verifier's challenge: the provider must refuse the exchange.
    code = fake.issue_code(code_challenge(new_code_verifier()))
    with pytest.raises(TokenEndpointError) as info:
        await manager.complete_authorization(request.state, code)
    assert info.value.status == 400 and info.value.error == "invalid_grant"
    assert await manager.get_grant("alice", "fake") is None


async def test_tokens_encrypted_at_rest(
    manager: OAuthManager, fake: FakeOAuthProvider, tmp_path: Path, key: str
) -> None:
    await authorize(manager, fake)
    files = list((tmp_path / "oauth").iterdir())
    raw = (tmp_path / "oauth" / "tokens.enc").read_bytes()
    access, refresh = fake.access_tokens[-1], next(iter(fake.refresh_tokens))
    for file in files:
        if file.is_file():
            content = file.read_bytes()
            assert access.encode() not in content and refresh.encode() not in content
            assert b"alice" not in content
    assert (tmp_path / "oauth" / "tokens.enc").stat().st_mode & 0o077 == 0
    # Another key cannot read it; the right one can.
    with pytest.raises(TokenKeyError, match="another key"):
        await FileTokenStore(tmp_path / "oauth" / "tokens.enc", generate_key()).load(
            "alice", "fake"
        )
    stored = await FileTokenStore(tmp_path / "oauth" / "tokens.enc", key).load("alice", "fake")
    assert stored is not None and stored.access_token.get_secret_value() == access
    assert access not in repr(stored)
    # Key rotation: the new key first, the old one still decrypts.
    rotated = FileTokenStore(tmp_path / "oauth" / "tokens.enc", f"{generate_key()},{key}")
    assert await rotated.load("alice", "fake") is not None
    assert raw  # sanity


async def test_refresh_once_under_concurrency(
    manager: OAuthManager, fake: FakeOAuthProvider, clock: Clock
) -> None:
    fake.expires_in = 30  # inside the 60 s margin: the next use refreshes
    await authorize(manager, fake)
    first = fake.access_tokens[-1]
    fake.expires_in = 3600
    fake.refresh_delay = 0.2
    tokens = await asyncio.gather(*(manager.access_token("alice", "fake") for _ in range(10)))
    assert fake.count("refresh_token") == 1
    assert set(tokens) == {fake.access_tokens[-1]} and first not in tokens
    assert await manager.access_token("alice", "fake") == tokens[0]
    assert fake.count("refresh_token") == 1


async def test_refresh_once_across_stores(
    fake: FakeOAuthProvider, key: str, tmp_path: Path, clock: Clock
) -> None:
    # Two managers on the same files stand for two worker processes: the file lock holds.
    providers = [fake.provider_config()]
    one = OAuthManager.from_data_dir(providers, tmp_path, now=clock)
    two = OAuthManager.from_data_dir(providers, tmp_path, now=clock)
    fake.expires_in = 30
    await authorize(one, fake)
    fake.expires_in = 3600
    fake.refresh_delay = 0.2
    calls = [m.access_token("alice", "fake") for m in (one, two) for _ in range(5)]
    tokens = await asyncio.gather(*calls)
    assert fake.count("refresh_token") == 1
    assert len(set(tokens)) == 1


async def test_expiry_triggers_refresh(
    manager: OAuthManager, fake: FakeOAuthProvider, clock: Clock
) -> None:
    await authorize(manager, fake)
    first = await manager.access_token("alice", "fake")
    clock.advance(3600 - 59)  # within 60 s of expiry
    second = await manager.access_token("alice", "fake")
    assert second != first and fake.count("refresh_token") == 1


async def test_revoked_refresh_needs_authorization(
    manager: OAuthManager, fake: FakeOAuthProvider, clock: Clock
) -> None:
    await authorize(manager, fake)
    fake.revoke_all()
    clock.advance(3600)
    with pytest.raises(NeedsAuthorization, match="revoked"):
        await manager.access_token("alice", "fake", ["read"])
    assert await manager.get_grant("alice", "fake") is None  # forgotten


async def test_memory_stores(fake: FakeOAuthProvider) -> None:
    manager = OAuthManager(
        ProviderRegistry([fake.provider_config()]), MemoryTokenStore(), MemoryStateStore()
    )
    await authorize(manager, fake)
    assert await manager.access_token("alice", "fake") == fake.access_tokens[-1]


async def test_state_file_is_encrypted(key: str, tmp_path: Path, fake: FakeOAuthProvider) -> None:
    states = FileStateStore(tmp_path / "pending.enc")
    manager = OAuthManager([fake.provider_config()], MemoryTokenStore(), states)
    request = await manager.begin_authorization("fake", "alice", ["read"], "wf-x", "call-x")
    raw = (tmp_path / "pending.enc").read_bytes()
    assert request.state.encode() not in raw and b"wf-x" not in raw
    pending = await states.take(request.state)
    assert pending is not None and len(pending.code_verifier.get_secret_value()) >= 43
    assert await states.take(request.state) is None
