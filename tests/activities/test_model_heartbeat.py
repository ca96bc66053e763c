"""The model activity heartbeats while its model call is in flight.

With a heartbeat timeout on the activity (`AgentConfig.model_heartbeat_seconds`), a model
call whose completion was lost (the worker or the server died) is retried after that
timeout, not after the whole `model_timeout_seconds`. The model is a real HTTP server on
127.0.0.1 that answers slowly; `ActivityEnvironment` records the heartbeats.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment

from durable_tools import Message, ToolRegistry
from durable_tools._activities._core import core_activities
from durable_tools._activities._runtime import ToolRuntime
from durable_tools._activities._types import MODEL_ACTIVITY, ModelCall, ModelTurn
from durable_tools.messages import ModelRequest
from durable_tools.models import aclose_shared_clients
from durable_tools.tools import FileSystemArtifactStore
from fake_openai import CannedResponse, FakeOpenAIServer, chat_completion


@pytest.fixture
async def slow_model(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeOpenAIServer]:
    # Answers after a second: several heartbeat intervals of the test's 0.3 s timeout.
    with FakeOpenAIServer([CannedResponse(body=chat_completion(content="hi"), delay=1.0)]) as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
        monkeypatch.delenv("OPENAI_TIMEOUT", raising=False)
        yield fake
        await aclose_shared_clients()


def model_activity(tmp_path: Path) -> Callable[..., Any]:
    runtime = ToolRuntime(ToolRegistry(), artifact_store=FileSystemArtifactStore(tmp_path))
    [found] = [
        fn
        for fn in core_activities(runtime)
        if getattr(fn, "__temporal_activity_definition").name == MODEL_ACTIVITY
    ]
    return found


def call() -> ModelCall:
    return ModelCall(request=ModelRequest(model="openai:gpt-test", messages=[Message.user("hi")]))


def environment(heartbeat_timeout: timedelta | None) -> tuple[ActivityEnvironment, list[Any]]:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, heartbeat_timeout=heartbeat_timeout)
    beats: list[Any] = []
    env.on_heartbeat = lambda *details: beats.append(details)
    return env, beats


async def test_the_model_activity_heartbeats_during_a_slow_call(
    slow_model: FakeOpenAIServer, tmp_path: Path
) -> None:
    env, beats = environment(timedelta(seconds=0.3))
    turn: ModelTurn = await env.run(model_activity(tmp_path), call())
    assert turn.response.message.content == "hi"
    assert len(slow_model.requests) == 1
    assert beats, "no heartbeat during a model call three heartbeat timeouts long"


async def test_no_heartbeats_without_a_heartbeat_timeout(
    slow_model: FakeOpenAIServer, tmp_path: Path
) -> None:
    env, beats = environment(None)
    turn: ModelTurn = await env.run(model_activity(tmp_path), call())
    assert turn.response.message.content == "hi" and beats == []
