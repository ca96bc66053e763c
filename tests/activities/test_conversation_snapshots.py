"""Conversation snapshots as delta chains in the artifact store (no server needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from durable_tools import Message
from durable_tools._activities._conversation import ConversationSnapshots, SnapshotMissing
from durable_tools.tools import FileSystemArtifactStore


def test_chain_round_trips_across_fresh_processes(tmp_path: Path) -> None:
    store = FileSystemArtifactStore(tmp_path)
    writer = ConversationSnapshots(store)
    first = [Message.system("be brief"), Message.user("hi")]
    ref1 = writer.save(None, [], first)
    second = [Message(role="assistant", content="hello"), Message.user("more")]
    ref2 = writer.save(ref1, first, second)
    # Another worker process: empty cache, same store.
    reader = ConversationSnapshots(FileSystemArtifactStore(tmp_path))
    assert reader.load(ref2, 4) == [*first, *second]
    assert reader.load(ref1, 2) == first
    # Each node holds only its delta, plus a reference to the node before.
    node = store.get(ref2).decode()
    assert "be brief" not in node and "more" in node and ref1.sha256 in node


def test_missing_or_mismatched_snapshots_are_reported(tmp_path: Path) -> None:
    writer = ConversationSnapshots(FileSystemArtifactStore(tmp_path / "a"))
    ref = writer.save(None, [], [Message.user("x")])
    other_machine = ConversationSnapshots(FileSystemArtifactStore(tmp_path / "b"))
    with pytest.raises(SnapshotMissing):
        other_machine.load(ref, 1)
    with pytest.raises(SnapshotMissing, match="expected 5"):
        writer.load(ref, 5)


def test_cache_is_bounded(tmp_path: Path) -> None:
    snapshots = ConversationSnapshots(FileSystemArtifactStore(tmp_path), cache_size=3)
    base = None
    messages: list[Message] = []
    for i in range(10):
        added = [Message.user(str(i))]
        base = snapshots.save(base, messages, added)
        messages = [*messages, *added]
    assert len(snapshots._cache) == 3
    assert base is not None and snapshots.load(base, 10) == messages


def test_tool_definitions_are_stored_once_and_loaded_by_reference(tmp_path: Path) -> None:
    from durable_tools.messages import ToolDefinition

    tools = [ToolDefinition(name="add", description="Add.", parameters={"type": "object"})]
    ref = ConversationSnapshots(FileSystemArtifactStore(tmp_path)).save_tools(tools)
    assert ConversationSnapshots(FileSystemArtifactStore(tmp_path)).load_tools(ref) == tools
    with pytest.raises(SnapshotMissing):
        ConversationSnapshots(FileSystemArtifactStore(tmp_path / "elsewhere")).load_tools(ref)


def test_cached_answers_only_from_this_process_and_at_the_right_length(tmp_path: Path) -> None:
    store = FileSystemArtifactStore(tmp_path)
    writer = ConversationSnapshots(store)
    messages = [Message.user("hi")]
    ref = writer.save(None, [], messages)
    assert writer.cached(ref, 1) == messages
    assert writer.cached(ref, 2) is None  # the run expects another length: load() reports it
    # Another process holds nothing yet: the caller falls back to load() (in a thread).
    reader = ConversationSnapshots(FileSystemArtifactStore(tmp_path))
    assert reader.cached(ref, 1) is None
    assert reader.load(ref, 1) == messages and reader.cached(ref, 1) == messages
    tools_ref = writer.save_tools([])
    assert writer.cached_tools(tools_ref) == [] and reader.cached_tools(tools_ref) is None
