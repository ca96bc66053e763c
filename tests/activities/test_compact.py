"""The compact activity and the model activity's compacted view, run in an
`ActivityEnvironment` over a real artifact store, with scripted or fake-HTTP models.

Where a summary may end is the rule users rely on most: never between a tool call and
its result (a provider refuses a result whose call it was not sent).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from durable_tools import ArtifactRef, Message, ToolCall, ToolRegistry
from durable_tools._activities._compact import render_transcript, summary_boundary
from durable_tools._activities._conversation import ConversationSnapshots
from durable_tools._activities._core import core_activities
from durable_tools._activities._runtime import ToolRuntime
from durable_tools._activities._types import (
    COMPACT_ACTIVITY,
    MODEL_ACTIVITY,
    SNAPSHOT_MISSING,
    CompactCall,
    Compacted,
    ModelCall,
)
from durable_tools.messages import ModelRequest
from durable_tools.models import aclose_shared_clients
from durable_tools.protocol._compaction import (
    MAX_SUMMARY_CHARS,
    estimate_message_tokens,
)
from durable_tools.tools import FileSystemArtifactStore
from durable_tools.workflows import ContextView
from fake_openai import FakeOpenAIServer, chat_completion
from support import write_script


def calls(*ids: str) -> Message:
    return Message(
        role="assistant", tool_calls=[ToolCall(id=i, name="look", arguments="{}") for i in ids]
    )


def result(call_id: str, content: str = "seen") -> Message:
    return Message.tool(call_id, "look", content)


# 0 system, 1 user, 2 assistant (3 parallel calls), 3-5 their results,
# 6 assistant (1 call), 7 its result, 8 assistant (calls whose results are not stored yet)
CONVERSATION = [
    Message.system("Be brief."),
    Message.user("look around"),
    calls("a", "b", "c"),
    result("a"),
    result("b"),
    result("c"),
    calls("d"),
    result("d"),
    calls("e"),
]


@pytest.mark.parametrize(
    ("start", "last", "boundary"),
    [
        (1, 5, 2),  # 5, 4, 3 are results of the call at 2: the kept part starts with the call
        (1, 7, 6),  # 7 answers the call at 6
        (1, 6, 6),
        (1, 100, 8),  # the snapshot's last answer is always kept
        (2, 5, None),  # only results between the previous summary and the kept part
        (1, 1, None),
        (6, 8, 8),
    ],
)
def test_a_summary_never_ends_between_a_call_and_its_result(
    start: int, last: int, boundary: int | None
) -> None:
    assert summary_boundary(CONVERSATION, start, last) == boundary


def test_the_transcript_is_bounded_and_keeps_both_ends() -> None:
    huge = [Message.user("first words"), result("a", "y" * 100_000), Message.user("last words")]
    text = render_transcript(None, huge, 1, max_chars=3_000)
    assert len(text) <= 3_000
    assert "[1] user:\nfirst words" in text and "last words" in text
    assert "left out" in text
    one = render_transcript("OLD SUMMARY", [result("a", "z" * 100_000)], 7, 1_000_000)
    assert one.startswith("The summary so far:\nOLD SUMMARY")
    assert "[7] result of look call a" in one and len(one) < 5_000


def test_a_view_that_does_not_fit_the_conversation_is_refused() -> None:
    view = ContextView(head=1, until=6, summary="S")
    assert view.apply(CONVERSATION) == [CONVERSATION[0], Message.user("S"), *CONVERSATION[6:]]
    for bad in (
        ContextView(head=1, until=40, summary="S"),
        ContextView(head=5, until=4, summary="S"),
    ):
        with pytest.raises(ValueError, match="does not fit"):
            bad.apply(CONVERSATION)
    with pytest.raises(ValueError):
        ContextView(head=-1, until=4, summary="S")


def activity_named(name: str, store: FileSystemArtifactStore) -> Callable[..., Any]:
    runtime = ToolRuntime(ToolRegistry(), artifact_store=store)
    [found] = [
        fn
        for fn in core_activities(runtime)
        if getattr(fn, "__temporal_activity_definition").name == name
    ]
    return found


def stored(store: FileSystemArtifactStore, messages: list[Message]) -> ArtifactRef:
    return ConversationSnapshots(store).save(None, [], messages)


def compact_call(model: str, ref: ArtifactRef, **fields: Any) -> CompactCall:
    return CompactCall(
        model=model,
        base=ref,
        base_length=len(CONVERSATION),
        keep_from=fields.pop("keep_from", 7),
        instructions="Summarise.",
        max_input_chars=50_000,
        **fields,
    )


async def test_the_summariser_reads_the_range_and_the_previous_summary(tmp_path: Path) -> None:
    store = FileSystemArtifactStore(tmp_path / "store")
    ref = stored(store, CONVERSATION)
    summarizer = write_script(tmp_path, [{"text": "  they looked at a, b and c  "}])
    compact = activity_named(COMPACT_ACTIVITY, store)
    previous = ContextView(head=1, until=2, summary="OLD SUMMARY")
    out: Compacted = await ActivityEnvironment().run(
        compact, compact_call(summarizer, ref, previous=previous)
    )
    assert (out.head, out.until, out.replaced) == (1, 6, 4)
    assert out.summary == "they looked at a, b and c"
    assert out.tokens_replaced == estimate_message_tokens(CONVERSATION[2:6])
    assert out.kept_tokens == estimate_message_tokens([CONVERSATION[0], *CONVERSATION[6:]])
    assert out.summary_ref is not None
    assert store.get(out.summary_ref).decode() == out.summary


async def test_a_range_of_results_only_is_left_alone(tmp_path: Path) -> None:
    store = FileSystemArtifactStore(tmp_path)
    ref = stored(store, CONVERSATION)
    compact = activity_named(COMPACT_ACTIVITY, store)
    previous = ContextView(head=1, until=3, summary="S")
    # No model is called (the spec would fail if it were).
    out = await ActivityEnvironment().run(
        compact, compact_call("scripted:/nonexistent.json", ref, previous=previous, keep_from=5)
    )
    assert out.until == 0 and out.summary == ""


async def test_a_summariser_that_writes_a_book_is_cut_and_one_that_says_nothing_fails(
    tmp_path: Path,
) -> None:
    store = FileSystemArtifactStore(tmp_path)
    ref = stored(store, CONVERSATION)
    compact = activity_named(COMPACT_ACTIVITY, store)
    book = write_script(tmp_path, [{"text": "w" * 2_000_000}])
    out = await ActivityEnvironment().run(compact, compact_call(book, ref))
    assert MAX_SUMMARY_CHARS - 100 <= len(out.summary) <= MAX_SUMMARY_CHARS
    mute = write_script(tmp_path, [{"tool_calls": [{"name": "look"}]}])
    with pytest.raises(ApplicationError) as caught:
        await ActivityEnvironment().run(compact, compact_call(mute, ref))
    assert caught.value.type == "CompactionFailed" and not caught.value.non_retryable


async def test_a_missing_snapshot_is_said(tmp_path: Path) -> None:
    ref = stored(FileSystemArtifactStore(tmp_path / "elsewhere"), CONVERSATION)
    compact = activity_named(COMPACT_ACTIVITY, FileSystemArtifactStore(tmp_path / "here"))
    with pytest.raises(ApplicationError) as caught:
        await ActivityEnvironment().run(compact, compact_call("scripted:/x.json", ref))
    assert caught.value.type == SNAPSHOT_MISSING and caught.value.non_retryable


async def test_the_model_is_sent_the_view_and_the_snapshot_keeps_everything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FileSystemArtifactStore(tmp_path)
    ref = stored(store, CONVERSATION)
    model = activity_named(MODEL_ACTIVITY, store)
    added = [result("e", "fresh")]
    view = ContextView(head=1, until=6, summary="SUMMARY")

    def call(context: ContextView) -> ModelCall:
        return ModelCall(
            request=ModelRequest(model="openai:gpt-test", messages=added),
            base=ref,
            base_length=len(CONVERSATION),
            context=context,
        )

    with FakeOpenAIServer([chat_completion("ok")]) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        turn = await ActivityEnvironment().run(model, call(view))
        with pytest.raises(ApplicationError) as caught:
            await ActivityEnvironment().run(model, call(ContextView(head=1, until=99, summary="S")))
        await aclose_shared_clients()
    sent = server.requests[0].json["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "assistant", "tool"]
    assert sent[1]["content"] == "SUMMARY" and sent[-1]["content"] == "fresh"
    assert len(server.requests) == 1  # the bad view never reached the model
    assert caught.value.type == "ContextViewInvalid" and caught.value.non_retryable
    whole = ConversationSnapshots(store).load(turn.snapshot, turn.snapshot_length)
    assert whole == [*CONVERSATION, *added, Message(role="assistant", content="ok")]
    assert json.dumps(sent).count("look around") == 0  # summarised away from the model only
