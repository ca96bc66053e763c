"""Shared pieces of the OAuth tests: the fake provider's client secret, a manager whose
redirect reaches a callback on a known port, that callback server, and the user's browser."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.client import Client

from durable_tools.oauth import (
    CallbackServer,
    NotifyRetry,
    OAuthManager,
    generate_key,
    run_notifier,
    serve_callback,
)
from oauth.fake_provider import FakeOAuthProvider
from support import free_port

CLIENT_SECRET_ENV = "FAKE_OAUTH_CLIENT_SECRET"
"""Where `FakeOAuthProvider.provider_config` reads the client secret from."""

OAuthSetup = tuple[FakeOAuthProvider, OAuthManager, CallbackServer]
"""The fake provider, the manager, and the callback server it redirects to."""


class Clock:
    """An OAuth manager's clock (`now=`): time moves only when the test says so."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def callback_uri(port: int) -> str:
    """The redirect URI of a callback server on `port` (the default path)."""
    return f"http://127.0.0.1:{port}/oauth/callback"


def manager_for(fake: FakeOAuthProvider, data_dir: Path, port: int, **options: Any) -> OAuthManager:
    """A manager (fresh key) for the fake provider, redirecting to a callback on `port`."""
    return OAuthManager.from_data_dir(
        [fake.provider_config(redirect_uri=callback_uri(port))],
        data_dir,
        key=generate_key(),
        **options,
    )


@asynccontextmanager
async def serving_callback(
    client: Client,
    data_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    retry: NotifyRetry | None = None,
    **options: Any,
) -> AsyncIterator[OAuthSetup]:
    """The fake provider, a manager (`options` go to it) and its callback server, which
    tells the runs through `client`; the server stops at the end of the block."""
    monkeypatch.setenv(CLIENT_SECRET_ENV, "test-secret")
    port = free_port()
    with FakeOAuthProvider() as fake:
        manager = manager_for(fake, data_dir, port, **options)
        on_complete, on_error = run_notifier(client)
        server = await serve_callback(manager, on_complete, on_error, port=port, retry=retry)
        try:
            yield fake, manager, server
        finally:
            await server.stop()


@pytest.fixture
async def oauth(
    client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[OAuthSetup]:
    """`serving_callback` as a fixture: the fake provider, a manager (its data in the
    test's `tmp_path`) and the callback server, telling runs through the session's client.
    A test module takes it with `oauth = oauth_support.oauth`."""
    async with serving_callback(client, tmp_path, monkeypatch) as setup:
        yield setup


async def open_link(url: str) -> httpx.Response:
    """What the user does: open the URL; the fake provider approves and redirects back."""
    async with httpx.AsyncClient(follow_redirects=True, timeout=10) as browser:
        return await browser.get(url)
