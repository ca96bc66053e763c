"""Fixtures of the OAuth tests: the fake provider, with its client secret in the environment."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from oauth.fake_provider import FakeOAuthProvider
from oauth_support import CLIENT_SECRET_ENV


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOAuthProvider]:
    """The fake provider on a free port; `provider_config()` finds its client secret."""
    monkeypatch.setenv(CLIENT_SECRET_ENV, "test-secret")
    with FakeOAuthProvider() as provider:
        yield provider
