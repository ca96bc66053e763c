"""Bounded work on the worker: searches that cannot freeze it, reads that cannot flood it."""

from __future__ import annotations

import random
import re
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from durable_tools import ToolContext, ToolExecutionError, ToolRegistry, ToolResult
from durable_tools.workspace import Workspace, register_workspace_tools
from durable_tools.workspace._search import SearchLimits, search


def tools(root: Path, **options: Any) -> ToolRegistry:
    registry = ToolRegistry()
    register_workspace_tools(registry, root, **options)
    return registry


async def call(registry: ToolRegistry, name: str, **arguments: Any) -> ToolResult:
    return await registry.invoke(name, arguments, ToolContext(tool_call_id="c1", tool_name=name))


def text(result: ToolResult) -> str:
    return result.content[0].text or ""


# ---------------------------------------------------------------- search_files


@pytest.mark.timeout(60)
async def test_a_catastrophic_pattern_answers_at_once_through_the_tool(tmp_path: Path):
    # With `re`, this search backtracked for longer than the universe holding the GIL; with
    # `regex`, it failed at the timeout. RE2 does not backtrack: it answers, and rightly.
    # (More such patterns: test_search_patterns.py.)
    (tmp_path / "evil.txt").write_text("fine\n" + "a" * 5000 + "b\n" + "a" * 5000 + "\n")
    registry = tools(tmp_path, search_timeout=1)
    found = text(await call(registry, "search_files", pattern="(a+)+$"))
    assert found.splitlines() == ["1 match in 1 file", "evil.txt:3: " + "a" * 300 + "..."]


async def test_a_search_is_bounded_in_files_and_bytes(tmp_path: Path):
    for index in range(5):
        (tmp_path / f"f{index}.txt").write_text("needle\n")
    workspace = Workspace(tmp_path)
    few = search(workspace, "needle", ".", None, SearchLimits(max_files=2))
    assert few.startswith("2 matches in 2 files (stopped after reading 2 files (14 bytes)")
    assert "narrow the path or glob" in few
    small = search(workspace, "needle", ".", None, SearchLimits(max_bytes=20))
    assert small.startswith("2 matches in 2 files (stopped after reading 2 files")
    none = search(workspace, "absent", ".", None, SearchLimits(max_files=1))
    assert none == "no matches for 'absent' (stopped after reading 1 files (7 bytes), " + (
        "the most one search reads; narrow the path or glob)"
    )
    assert search(workspace, "needle", ".", None, SearchLimits()).startswith("5 matches in 5")


# ------------------------------------------------------------------- read_file


def write_big_line(path: Path, megabytes: int) -> bytes:
    chunk = b"0123456789" * 100_000  # 1 MB, no newline
    with path.open("wb") as handle:
        for _ in range(megabytes):
            handle.write(chunk)
    return chunk


async def test_a_50mb_single_line_is_read_in_bounded_memory_and_in_pieces(tmp_path: Path):
    chunk = write_big_line(tmp_path / "one-line.txt", 50)
    registry = tools(tmp_path, max_output_bytes=64_000)
    tracemalloc.start()
    try:
        first = text(await call(registry, "read_file", path="one-line.txt"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2_000_000, peak  # the file is 50,000,000 bytes; reading kept ~64 KB
    body, note = first.split("\n[", 1)
    assert body == chunk[:64_000].decode()
    assert note == (
        "line 1 is 50000000 bytes, cut at byte 64000 (the file has 1 line); call read_file "
        "with offset=1 and byte_offset=64000 for the rest of it]"
    )
    second = text(await call(registry, "read_file", path="one-line.txt", byte_offset=64_000))
    assert second.startswith(chunk[64_000 : 64_000 + 1000].decode())
    assert "byte_offset=128000" in second
    last = text(await call(registry, "read_file", path="one-line.txt", byte_offset=50_000_000 - 10))
    assert last == "0123456789\n[lines 1-1 of 1]"


async def test_long_lines_read_in_pieces_reassemble_the_file_exactly(tmp_path: Path):
    # Multi-byte characters, a line far over the bound between short ones.
    content = "short\n" + "é€𝄞x" * 700 + "\n" + "".join(f"line {i}\n" for i in range(50))
    (tmp_path / "mixed.txt").write_text(content)
    registry = tools(tmp_path, max_output_bytes=1000)
    pieces: list[str] = []
    offset, byte_offset = 1, 0
    for _ in range(100):
        out = text(
            await call(
                registry, "read_file", path="mixed.txt", offset=offset, byte_offset=byte_offset
            )
        )
        body, _, note = out.rpartition("\n[")
        pieces.append(body)
        more = re.search(r"offset=(\d+)(?: and byte_offset=(\d+))?", note)
        if more is None:
            break
        offset, byte_offset = int(more[1]), int(more[2] or 0)
    else:
        pytest.fail("the pieces never ended")
    assert "".join(pieces) == content
    assert all(len(p.encode()) <= 1000 for p in pieces)


async def test_edit_file_refuses_files_too_large_to_hold(tmp_path: Path):
    write_big_line(tmp_path / "huge.txt", 17)
    registry = tools(tmp_path, approval_for_writes=False)
    with pytest.raises(ToolExecutionError, match="more than edit_file edits"):
        await call(registry, "edit_file", path="huge.txt", old_text="0", new_text="1")


async def test_following_the_notes_reassembles_any_text(tmp_path: Path):
    rng = random.Random(7)  # fixed: the same 150 files every run
    alphabet = ["a", "é", "€", "𝄞", "\n", "\n", "xyz"]
    for _ in range(150):
        content = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 400)))
        (tmp_path / "f.txt").write_bytes(content.encode())
        budget = rng.randint(4, 60)
        registry = tools(tmp_path, max_output_bytes=budget)
        pieces: list[str] = []
        offset, byte_offset = 1, 0
        for _ in range(2000):
            out = text(
                await call(
                    registry, "read_file", path="f.txt", offset=offset, byte_offset=byte_offset
                )
            )
            body, sep, note = out.rpartition("\n[")
            if not sep:
                body, note = out, ""
            pieces.append(body)
            more = re.search(r"offset=(\d+)(?: and byte_offset=(\d+))?", note)
            if more is None:
                break
            offset, byte_offset = int(more[1]), int(more[2] or 0)
        assert "".join(pieces) == content, (content, budget)
        assert all(len(p.encode()) <= budget for p in pieces)
