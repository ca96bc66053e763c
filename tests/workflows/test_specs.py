"""Hooks once per call, skips, invalid-call policy, retry allow-lists, output validation,
examples, tool-message metadata and full-identity catalogs, on the real dev server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from temporalio.client import Client, WorkflowFailureError

from durable_tools import (
    AgentConfig,
    Denied,
    DurableTools,
    Identity,
    InvalidArguments,
    RetrySpec,
    RunStatus,
    Skip,
    ToolRegistry,
)
from durable_tools.models import aclose_shared_clients
from durable_tools.tools import ToolCallInfo
from fake_openai import FakeOpenAIServer, chat_completion, tool_call
from support import answer, assert_not_wedged, calls, running_worker, write_script

FAST = {"initial_interval": 0.05, "maximum_interval": 0.1, "maximum_attempts": 3}


def counting_hook(seen: dict[str, int]) -> SimpleNamespace:
    def before(call: ToolCallInfo) -> None:
        seen[call.name] = seen.get(call.name, 0) + 1

    return SimpleNamespace(before=before)


async def test_before_hooks_run_once_per_call_across_retries(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    tries: dict[str, int] = {}
    hooks: dict[str, int] = {}
    registry = ToolRegistry()
    registry.use(counting_hook(hooks))

    def flaky(name: str) -> str:
        tries[name] = tries.get(name, 0) + 1
        if tries[name] < 3:
            raise ConnectionError("backend unavailable")
        return "ok"

    @registry.tool(read_only=True, retry=RetrySpec(**FAST))
    def lookup(key: str) -> str:
        """Retried by Temporal itself (read-only)."""
        return flaky("lookup")

    @registry.tool(retry=RetrySpec(**FAST))
    def send(text: str) -> str:
        """Mutating: the workflow schedules its retries."""
        return flaky("send")

    model = write_script(
        tmp_path,
        [calls(("l1", "lookup", {"key": "k"}), ("s1", "send", {"text": "t"})), answer("done")],
    )
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("go", model=model)
        result = await run.result()
        timeline = {r.call_id: r for r in await run.timeline()}
        await assert_not_wedged(run.handle)
    assert result.status == RunStatus.COMPLETED
    assert tries == {"lookup": 3, "send": 3}
    assert hooks == {"lookup": 1, "send": 1}
    assert timeline["l1"].status == timeline["s1"].status == "completed"


async def test_a_skipping_hook_gives_the_model_an_error_and_a_skipped_event(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    ran: list[str] = []
    registry = ToolRegistry()

    @registry.tool
    def deploy(env: str) -> str:
        """Deploy."""
        ran.append(env)
        return "deployed"

    registry.use(SimpleNamespace(before=lambda call: Skip("deploys are frozen today")))
    model = write_script(tmp_path, [calls(("d1", "deploy", {"env": "prod"})), answer("ok")])
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("go", model=model)
        result = await run.result()
        events = await run.events()
        conversation = await run.conversation()
        timeline = await run.timeline()
        await assert_not_wedged(run.handle)
    assert result.status == RunStatus.COMPLETED and ran == []
    names = [e.event for e in events if e.call_id == "d1"]
    # The call was scheduled (`tool.started`, which a follower may already have read),
    # then skipped by the hook instead of completing.
    assert names == ["tool.started", "tool.skipped"]
    message = next(m for m in conversation if m.role == "tool")
    assert message.is_error is True and message.at is not None
    assert "deploys are frozen today" in (message.content or "")
    assert timeline[0].status == "skipped"


async def test_on_invalid_call_fail_ends_the_run_with_a_reason(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    registry = ToolRegistry()

    @registry.tool
    def ping() -> str:
        """Ping."""
        return "pong"

    model = write_script(tmp_path, [calls(("x1", "no_such_tool", {})), answer("never")])
    config = AgentConfig(model=model, on_invalid_call="fail")
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("go", config=config)
        result = await run.result()
        await assert_not_wedged(run.handle)
    assert result.status == RunStatus.FAILED
    assert result.reason is not None and "x1" in result.reason
    assert "no_such_tool" in result.reason


async def test_retry_on_retries_only_the_listed_errors(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    tries: dict[str, int] = {}
    registry = ToolRegistry()
    policy = RetrySpec(**FAST, retry_on=("ConnectionError",))

    @registry.tool(retry=policy)
    def wrong(n: int) -> str:
        """A ValueError: retryable by default, not on the list."""
        tries["wrong"] = tries.get("wrong", 0) + 1
        raise ValueError("bad input")

    @registry.tool(retry=policy)
    def shaky(n: int) -> str:
        """A ConnectionError twice, then an answer."""
        tries["shaky"] = tries.get("shaky", 0) + 1
        if tries["shaky"] < 3:
            raise ConnectionError("reset")
        return "ok"

    model = write_script(
        tmp_path, [calls(("w1", "wrong", {"n": 1}), ("s1", "shaky", {"n": 1})), answer("done")]
    )
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("go", model=model)
        result = await run.result()
        timeline = {r.call_id: r for r in await run.timeline()}
        await assert_not_wedged(run.handle)
    assert result.status == RunStatus.COMPLETED
    assert tries == {"wrong": 1, "shaky": 3}
    assert timeline["w1"].status == "failed" and timeline["w1"].attempts == 1
    assert timeline["s1"].status == "completed"


async def test_an_output_that_breaks_its_schema_is_reported_once(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    ran: list[int] = []
    registry = ToolRegistry()

    @registry.tool(validate="output", read_only=True, retry=RetrySpec(**FAST))
    def count(n: int) -> dict[str, int]:
        """Count."""
        ran.append(n)
        return {"total": "many"}  # type: ignore[dict-item]

    model = write_script(tmp_path, [calls(("c1", "count", {"n": 1})), answer("done")])
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("go", model=model)
        result = await run.result()
        conversation = await run.conversation()
        await assert_not_wedged(run.handle)
    assert result.status == RunStatus.COMPLETED and ran == [1]
    message = next(m for m in conversation if m.role == "tool")
    assert message.is_error is True and "output schema" in (message.content or "")


@pytest.fixture
def openai_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(
        [
            chat_completion(tool_calls=[tool_call("a1", "add", json.dumps({"a": 2, "b": 3}))]),
            chat_completion("5"),
        ]
    ) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        yield server


async def test_examples_reach_the_model_and_tool_messages_carry_is_error_and_at(
    client: Client, task_queue: str, openai_server: FakeOpenAIServer
) -> None:
    registry = ToolRegistry()

    @registry.tool(examples=[{"a": 1, "b": 2}])
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    try:
        async with running_worker(client, registry, task_queue):
            run = await DurableTools(client, task_queue).start("2+3?", model="openai:fake")
            result = await run.result()
            conversation = await run.conversation()
            await assert_not_wedged(run.handle)
    finally:
        await aclose_shared_clients()
    assert result.status == RunStatus.COMPLETED
    first, second = (r.json for r in openai_server.requests)
    description = first["tools"][0]["function"]["description"]
    assert description == 'Add two numbers.\n\nExamples:\n{"a": 1, "b": 2}'
    sent = next(m for m in second["messages"] if m["role"] == "tool")
    assert set(sent) == {"role", "tool_call_id", "content"}  # no unknown fields to providers
    kept = next(m for m in conversation if m.role == "tool")
    assert kept.is_error is False and kept.at is not None


async def test_a_catalog_that_requires_a_full_identity_refuses_a_partial_one(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    registry = ToolRegistry(require_full_identity=True)

    @registry.tool
    def ping() -> str:
        """Ping."""
        return "pong"

    model = write_script(tmp_path, [calls(("p1", "ping", {})), answer("done")])
    tools = DurableTools(client, task_queue)
    async with running_worker(client, registry, task_queue):
        partial = await tools.start("go", model=model, identity=Identity(user="ana"))
        with pytest.raises(WorkflowFailureError) as caught:
            await partial.result()
        await assert_not_wedged(partial.handle)
        full = Identity(user="ana", tenant="acme", session="s1")
        ok = await tools.start("go", model=model, identity=full)
        assert (await ok.result()).status == RunStatus.COMPLETED
    chain, error = [], caught.value.cause
    while error is not None:
        chain.append(str(error))
        error = error.__cause__
    assert any("missing: tenant, session" in text for text in chain)


@pytest.mark.parametrize("local", [False, True], ids=["activity", "local-activity"])
@pytest.mark.parametrize("error", [InvalidArguments("no such account"), Denied("not allowed")])
async def test_a_tool_raising_a_final_kind_is_not_retried(
    client: Client, task_queue: str, tmp_path: Path, error: Exception, local: bool
) -> None:
    # The retry policy no longer lists the final kinds: the tool activity raises them
    # non-retryable itself, even when a tool raises them by hand.
    tries: list[int] = []
    registry = ToolRegistry()

    @registry.tool(
        read_only=True, local=local, retry=RetrySpec(initial_interval=0.05, maximum_attempts=5)
    )
    def lookup(n: int) -> str:
        """Fails with a kind that trying again cannot fix."""
        tries.append(n)
        raise error

    model = write_script(tmp_path, [calls(("l1", "lookup", {"n": 1})), answer("done")])
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("go", model=model)
        result = await run.result()
        [record] = await run.timeline()
        await assert_not_wedged(run.handle)
    assert result.status == RunStatus.COMPLETED
    assert tries == [1] and record.status == "failed" and record.attempts == 1
