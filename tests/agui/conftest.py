"""Fixtures of the AG-UI endpoint tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fake_openai import FakeOpenAIServer


@pytest.fixture
def openai_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    """A real OpenAI-wire server on 127.0.0.1 that the `openai:` models of the test call."""
    with FakeOpenAIServer() as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-agui-0123")
        yield fake
