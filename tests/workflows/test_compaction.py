"""Context compaction on a real dev server, against fake providers that count what they
are sent and refuse, in their own wire format, a request past a configured window."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from temporalio import activity
from temporalio.client import Client, WorkflowFailureError
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.plugin import SimplePlugin
from temporalio.worker import Replayer

from durable_tools import (
    AgentConfig,
    CompactionConfig,
    DurableTools,
    Limits,
    Message,
    RunStatus,
    ToolRegistry,
)
from durable_tools._activities._types import COMPACT_ACTIVITY, CompactCall, Compacted
from durable_tools.messages import ModelResponse, Usage
from durable_tools.tools import FileSystemArtifactStore
from durable_tools.worker import workflow_runner
from durable_tools.workflows import AgentInput, AgentWorkflow
from durable_tools.workflows.loop._compaction import note_context
from durable_tools.workflows.run._carry import start_state
from fake_anthropic import FakeAnthropicServer, message, text, tool_use
from fake_openai import (
    FakeOpenAIServer,
    RecordedRequest,
    chat_completion,
    sent_tokens,
    tool_call,
)
from support import assert_not_wedged, running_worker, write_script

WINDOW = 6_000
"""The fake model's context window, in tokens (4 bytes of request a token)."""
TURNS = 30
PAGE = 2_000  # characters of each tool result: about 500 tokens a turn


def pages() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    def page(n: int) -> str:
        """Read page n of a long document."""
        return f"page {n}: " + "x" * PAGE

    return registry


def is_summary_request(messages: list[dict[str, Any]]) -> bool:
    first = messages[0]
    return first["role"] == "system" and "You summarise" in str(first["content"])


class PageReader:
    """An OpenAI-compatible model that reads `TURNS` pages one turn at a time, then answers.

    It counts its own turns (it cannot count the pages it sees: compaction hides them),
    reports the request's size as its input tokens, and answers summarisation requests.
    """

    def __init__(self, *, summary_chars: int = 200, report_usage: bool = True) -> None:
        self.turn = 0
        self.summary_chars = summary_chars
        self.report_usage = report_usage
        self.summaries = 0

    def __call__(self, request: RecordedRequest) -> dict[str, Any]:
        messages = request.json["messages"]
        # Without usage (some compatible servers report none) the run estimates instead.
        used = sent_tokens(request) if self.report_usage else 0
        if is_summary_request(messages):
            self.summaries += 1
            summary = f"summary {self.summaries}: pages read so far " + "s" * self.summary_chars
            return chat_completion(content=summary, prompt_tokens=used, completion_tokens=60)
        self.turn += 1
        if self.turn <= TURNS:
            call = tool_call(f"p{self.turn}", "page", json.dumps({"n": self.turn}))
            return chat_completion(tool_calls=[call], prompt_tokens=used, completion_tokens=20)
        return chat_completion(content=f"read {TURNS} pages", prompt_tokens=used)


def agent_requests(server: FakeOpenAIServer) -> list[RecordedRequest]:
    return [r for r in server.requests if not is_summary_request(r.json["messages"])]


def orphan_results(messages: list[dict[str, Any]]) -> list[str]:
    """Tool results in a request whose call the same request does not hold before them."""
    called: set[str] = set()
    orphans = []
    for entry in messages:
        for call in entry.get("tool_calls") or []:
            called.add(call["id"])
        if entry["role"] == "tool" and entry["tool_call_id"] not in called:
            orphans.append(entry["tool_call_id"])
    return orphans


def config(compaction: CompactionConfig | None, **options: Any) -> AgentConfig:
    return AgentConfig(
        model="openai:fake-model",
        instructions="Read every page, then say how many you read.",
        limits=Limits(max_turns=TURNS + 1, max_tool_calls=TURNS),
        compaction=compaction,
        **options,
    )


async def test_a_run_too_long_for_the_window_fails_without_compaction(
    client: Client, task_queue: str, tmp_path: Path, monkeypatch: Any
) -> None:
    with FakeOpenAIServer(PageReader(), context_limit=WINDOW) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        async with running_worker(
            client, pages(), task_queue, artifact_store=FileSystemArtifactStore(tmp_path)
        ):
            run = await DurableTools(client, task_queue).start("read", config=config(None))
            with pytest.raises(WorkflowFailureError):
                await run.result()
            status = await run.status()
    assert status.status == RunStatus.FAILED
    assert "exceeds the model's context window" in (status.reason or "")
    assert "maximum context length is 6000 tokens" in (status.reason or "")
    assert status.turn < TURNS // 2  # it died long before the end


@pytest.mark.parametrize("reported", [True, False], ids=["reported-usage", "estimated"])
async def test_compaction_lets_the_same_run_complete_within_the_window(
    client: Client, task_queue: str, tmp_path: Path, monkeypatch: Any, reported: bool
) -> None:
    model = PageReader(report_usage=reported)
    summarizer = None
    if not reported:  # and a summariser of its own: a script, one step per compaction
        steps = [{"text": f"summary {i + 1}: pages read so far"} for i in range(TURNS)]
        summarizer = write_script(tmp_path, steps)
    compaction = CompactionConfig(
        window_tokens=WINDOW, threshold=0.75, keep_last=4, summarizer_model=summarizer
    )
    with FakeOpenAIServer(model, context_limit=WINDOW) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        async with running_worker(
            client, pages(), task_queue, artifact_store=FileSystemArtifactStore(tmp_path)
        ):
            # Continuing as new on the way: the compacted view is carried too.
            agent = config(compaction, continue_as_new_after_events=120)
            run = await DurableTools(client, task_queue).start("read", config=agent)
            result = await run.result()
            events = await run.events()
            conversation = await run.conversation()
            status = await run.status()
    assert result.status == RunStatus.COMPLETED, result
    assert result.final_answer == f"read {TURNS} pages"
    assert status.continued >= 2
    sent = [sent_tokens(r) for r in agent_requests(server)]
    assert len(sent) == TURNS + 1  # no request was refused, none retried
    assert max(sent) <= WINDOW
    # Every request keeps each tool result with the call it answers, and the system prompt.
    for request in agent_requests(server):
        messages = request.json["messages"]
        assert orphan_results(messages) == []
        assert messages[0] == {
            "role": "system",
            "content": "Read every page, then say how many you read.",
        }
    # The events a continued run carries include its own compactions (older ones were
    # dropped with the earlier runs' events, as every event is).
    compacted = [e for e in events if e.event == "context.compacted"]
    assert len(compacted) >= 2
    if reported:
        assert model.summaries >= max(3, len(compacted))
    first = compacted[0].details
    assert first["trigger"] == "threshold" and first["first"] >= 1
    assert first["tokens_before"] > 0.75 * WINDOW > first["tokens_after"]
    assert first["messages"] == first["until"] - first["first"]
    assert first["summary"].startswith("summary ")
    assert compacted[0].artifacts  # the whole summary is kept in the artifact store
    # Each compaction folds the previous summary and the messages after it into one.
    assert [e.details["first"] for e in compacted[1:]] == [
        e.details["until"] for e in compacted[:-1]
    ]
    # The full transcript is still there: system, prompt, and each turn's call and result.
    assert len(conversation) == 2 + 2 * TURNS + 1
    assert [m.role for m in conversation[:4]] == ["system", "user", "assistant", "tool"]
    assert conversation[3].content is not None and conversation[3].content.startswith("page 1: ")
    if reported:  # the summariser's tokens are the run's too
        assert status.usage.input_tokens > sum(sent)

    # The run replays from its history alone: the summary is an activity result.
    history = await run.handle.fetch_history()
    replayer = Replayer(
        workflows=[AgentWorkflow],
        data_converter=pydantic_data_converter,
        workflow_runner=workflow_runner(strict=True),
    )
    replay = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert replay.replay_failure is None


async def test_a_context_too_long_error_compacts_once_and_retries(
    client: Client, task_queue: str, tmp_path: Path, monkeypatch: Any
) -> None:
    # The configured window is far too large, so only the provider's refusal compacts.
    turns = 12
    refused: list[int] = []
    summaries: list[str] = []

    def respond(request: RecordedRequest) -> dict[str, Any]:
        body = request.json
        if "You summarise" in str(body.get("system")):
            summaries.append(body["messages"][0]["content"][0]["text"])
            return message(text("summary: pages were read"))
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if len(summaries) > 0:
            turn = 100  # the summary stands for the earlier turns: the model knows to finish
        if turn < turns:
            return message(tool_use(f"p{turn}", "page", {"n": turn}))
        return message(text("done reading"))

    compaction = CompactionConfig(window_tokens=10_000_000, keep_last=2)
    with FakeAnthropicServer(respond, context_limit=WINDOW) as server:
        original = server._answer

        def counting(request: RecordedRequest) -> Any:
            answer = original(request)
            if answer.status == 400:
                refused.append(sent_tokens(request))
            return answer

        server._answer = counting  # type: ignore[method-assign]
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "k-test-compaction-0123")
        agent = AgentConfig(
            model="anthropic:claude-test",
            instructions="Read pages until told otherwise.",
            limits=Limits(max_turns=turns + 2, max_tool_calls=turns),
            compaction=compaction,
        )
        async with running_worker(
            client, pages(), task_queue, artifact_store=FileSystemArtifactStore(tmp_path)
        ):
            run = await DurableTools(client, task_queue).start("read", config=agent)
            result = await run.result()
            events = [e.event for e in await run.events()]
    assert result.status == RunStatus.COMPLETED, result
    assert result.final_answer == "done reading"
    assert len(refused) == 1 and refused[0] > WINDOW
    assert events.count("context.too_long") == 1
    assert events.count("context.compacted") == 1
    assert events.index("context.too_long") < events.index("context.compacted")
    assert "[1] user:\nread" in summaries[0]  # the summariser read the transcript


async def test_with_nothing_left_to_summarise_the_run_fails_once_with_the_reason(
    client: Client, task_queue: str, tmp_path: Path, monkeypatch: Any
) -> None:
    # Every message is among the last `keep_last`: compaction cannot help, and says so
    # once per conversation length instead of calling the summariser in a loop.
    compaction = CompactionConfig(window_tokens=WINDOW, keep_last=1_000)
    model = PageReader()
    with FakeOpenAIServer(model, context_limit=WINDOW) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        async with running_worker(
            client, pages(), task_queue, artifact_store=FileSystemArtifactStore(tmp_path)
        ):
            run = await DurableTools(client, task_queue).start("read", config=config(compaction))
            with pytest.raises(WorkflowFailureError):
                await run.result()
            status = await run.status()
            events = [e.event for e in await run.events()]
    assert model.summaries == 0
    assert "exceeds the model's context window" in (status.reason or "")
    assert events.count("context.too_long") == 1
    skipped = events.count("context.compaction_skipped")
    assert 1 <= skipped <= status.turn + 1
    refused = [r for r in server.requests if sent_tokens(r) > WINDOW]
    assert len(refused) == 1  # no retry without a compaction


async def test_a_summariser_that_fails_ends_the_run_naming_it(
    client: Client, task_queue: str, tmp_path: Path, monkeypatch: Any
) -> None:
    mute = write_script(tmp_path, [{"tool_calls": [{"name": "page", "arguments": {"n": 1}}]}])
    compaction = CompactionConfig(window_tokens=WINDOW, keep_last=2, summarizer_model=mute)
    with FakeOpenAIServer(PageReader(), context_limit=WINDOW) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        async with running_worker(
            client, pages(), task_queue, artifact_store=FileSystemArtifactStore(tmp_path)
        ):
            agent = config(compaction, model_max_attempts=1)
            run = await DurableTools(client, task_queue).start("read", config=agent)
            with pytest.raises(WorkflowFailureError):
                await run.result()
            status = await run.status()
    assert status.status == RunStatus.FAILED
    assert "context compaction failed" in (status.reason or "")
    assert "answered without text" in (status.reason or "")
    assert max(sent_tokens(r) for r in server.requests) <= WINDOW  # it stopped in time


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        ({"input_tokens": 1_000, "output_tokens": 50}, 1_050),
        # Reasoning tokens are not sent back; the answer itself still counts.
        ({"input_tokens": 1_000, "output_tokens": 500, "reasoning_tokens": 480}, 1_020),
        # Nothing reported: the projection plus the answer's estimate.
        ({}, 700 + 8),
        # An adapter's odd figures cannot make the context look smaller than its answer.
        ({"input_tokens": 1_000, "output_tokens": -(10**9)}, 1_008),
        ({"input_tokens": -5}, 700 + 8),
    ],
)
def test_the_context_size_after_a_call(usage: dict[str, int], expected: int) -> None:
    agent = config(CompactionConfig(window_tokens=WINDOW))
    state = start_state(AgentInput(prompt="read", config=agent))
    answer = Message(role="assistant", content="x" * 16)  # 4 tokens + 4 for the message
    note_context(state.model, ModelResponse(message=answer, usage=Usage(**usage)), 700)
    assert state.model.context_tokens == expected


LIES: dict[str, Callable[[CompactCall], Compacted]] = {
    "past-the-kept-messages": lambda call: Compacted(head=1, until=9_999, summary="ok"),
    "nothing-new": lambda call: Compacted(head=1, until=1, summary="ok"),
    # In range, but a summary no ContextView holds: the workflow task failed on it, again
    # and again, instead of the run failing once with the reason.
    "huge-summary": lambda call: Compacted(head=1, until=call.keep_from, summary="x" * 100_000),
    "negative-sizes": lambda call: Compacted(
        head=1, until=call.keep_from, summary="ok", kept_tokens=-(10**12)
    ),
}


@pytest.mark.parametrize("lie", list(LIES))
async def test_a_compact_activity_that_answers_out_of_range_fails_the_run(
    client: Client, task_queue: str, tmp_path: Path, monkeypatch: Any, lie: str
) -> None:
    # A worker whose compact activity lies (a bug, or an activity registered by someone
    # else under its name): the workflow refuses a view that would drop kept messages.
    @activity.defn(name=COMPACT_ACTIVITY)
    async def lying(call: CompactCall) -> Compacted:
        return LIES[lie](call)

    def swap(existing: Sequence[Callable[..., Any]]) -> list[Callable[..., Any]]:
        kept = [a for a in existing if activity_name(a) != COMPACT_ACTIVITY]
        return [*kept, lying]

    compaction = CompactionConfig(window_tokens=WINDOW, keep_last=2)
    with FakeOpenAIServer(PageReader(), context_limit=WINDOW) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        async with running_worker(
            client,
            pages(),
            task_queue,
            artifact_store=FileSystemArtifactStore(tmp_path),
            plugins=[SimplePlugin("lying-compact", activities=swap)],
        ):
            run = await DurableTools(client, task_queue).start("read", config=config(compaction))
            with pytest.raises(WorkflowFailureError):
                await asyncio.wait_for(run.result(), 60)
            status = await run.status()
            await assert_not_wedged(run.handle, allowed=0)
    assert "the compact activity answered" in (status.reason or "")
    assert max(sent_tokens(r) for r in server.requests) <= WINDOW


def activity_name(fn: Callable[..., Any]) -> str | None:
    definition = getattr(fn, "__temporal_activity_definition", None)
    return getattr(definition, "name", None)
