"""`search_files` under patterns built to wedge a regex engine.

Each of these froze or exhausted a worker with `re` or the `regex` package: nested counted
repetition never finished compiling (holding the GIL, growing ~1 GB/s), `(a+)+$`
backtracked for ever. With RE2 each ends at once, with a correct result or a refusal that
names the pattern and says why. A pytest timeout bounds every test: the old engines hung.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from durable_tools import DurableTools, RunStatus, ToolContext, ToolExecutionError, ToolRegistry
from durable_tools.workspace import Workspace, register_workspace_tools
from durable_tools.workspace._search import SearchLimits, search
from support import answer, calls, running_worker, write_script

pytestmark = pytest.mark.timeout(60)

NESTED = "((((a{100}){100}){100}){100})"
ALTERNATION = "|".join(f"word{i}" for i in range(1000))  # 8,890 characters
HUGE_ALTERNATION = "|".join(f"word{i}" for i in range(100_000))  # about 1 MB
MEGABYTE = "a" * 1_000_000
SLOW_LINEAR = "[^x]{1000}[^y]{1000}b"  # 16,005 RE2 instructions; its DFA thrashes


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A workspace whose lines feed every classic blow-up: long runs of `a`s."""
    (tmp_path / "as.txt").write_text("a" * 100_000 + "\n" + "a" * 100_000 + "b\n" + "aab\n")
    (tmp_path / "words.txt").write_text("nothing here\nthe word777 is here\n")
    (tmp_path / "short.txt").write_text("x\n" + "a" * 1000 + "\n")
    (tmp_path / "long.txt").write_text("a" * 1_000_000 + "\n")
    return tmp_path


def run(root: Path, pattern: str, path: str = ".") -> str:
    return search(Workspace(root), pattern, path, None, SearchLimits())


def refusal(root: Path, pattern: str, path: str = ".") -> str:
    with pytest.raises(ToolExecutionError) as refused:
        run(root, pattern, path)
    assert not refused.value.retryable
    return refused.value.message


def test_nested_counted_repetition_is_refused_at_compile_time(root: Path):
    message = refusal(root, NESTED)
    assert message.startswith(f"invalid regular expression {NESTED!r}: invalid repetition size")
    assert "RE2 syntax" in message and "{1000}" in message


def test_exponential_backtracking_patterns_give_correct_results(root: Path):
    # `(a+)+$`: line 1 is all `a`s (a match), line 2 ends in `b` (none), line 3 too.
    found = run(root, "(a+)+$", "as.txt")
    assert found.splitlines() == ["1 match in 1 file", "as.txt:1: " + "a" * 300 + "..."]
    found = run(root, "(a|aa)*b", "as.txt")
    assert found.splitlines()[0] == "2 matches in 1 file"
    assert found.splitlines()[2] == "as.txt:3: aab"


def test_repeated_star_matches_every_short_line(root: Path):
    assert run(root, "(.*){1000}", "short.txt").splitlines() == [
        "2 matches in 1 file",
        "short.txt:1: x",
        "short.txt:2: " + "a" * 300 + "...",
    ]


def test_alternations(root: Path):
    assert run(root, ALTERNATION, "words.txt").splitlines() == [
        "1 match in 1 file",
        "words.txt:2: the word777 is here",
    ]
    message = refusal(root, HUGE_ALTERNATION)
    assert message.startswith("the pattern 'word0|word1|")
    assert f"is {len(HUGE_ALTERNATION):,} characters long, more than the 10,000" in message
    assert len(message) < 400  # the pattern is named, not copied whole


def test_a_megabyte_pattern_is_refused_by_length(root: Path):
    message = refusal(root, MEGABYTE)
    assert "is 1,000,000 characters long, more than the 10,000 search_files takes" in message
    assert len(message) < 400


def test_a_pattern_too_large_once_compiled_is_refused(root: Path):
    message = refusal(root, r"\pL{1000}")  # 13 characters, over RE2's memory budget
    assert message.startswith(r"invalid regular expression '\\pL{1000}': pattern too large")


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        (r"(a)\1", r"invalid escape sequence: \1"),
        ("foo(?=bar)", "invalid perl operator: (?="),
        ("(?<!x)y", "invalid perl operator: (?<"),
        ("a++", "bad repetition operator: ++"),
        ("(", "missing ): ("),
    ],
)
def test_syntax_re2_lacks_is_refused_saying_so(root: Path, pattern: str, why: str):
    message = refusal(root, pattern)
    assert message.startswith(f"invalid regular expression {pattern!r}: {why}")
    assert "no backreferences" in message and "lookahead" in message


def test_a_lone_surrogate_is_refused(root: Path):
    assert "lone surrogate" in refusal(root, "a\ud800")


def test_a_pattern_too_complex_for_a_long_line_is_refused_before_matching(root: Path):
    # Linear, yet 16,005 instructions x 1,000,000 bytes took 34 s in RE2's NFA, in one
    # call nothing can interrupt. The same pattern on short lines is fine.
    message = refusal(root, SLOW_LINEAR, "long.txt")
    assert message.startswith(f"the pattern {SLOW_LINEAR!r} is too complex for long.txt:1")
    assert "a line of 1,000,000 bytes" in message and "16,005 RE2 instructions" in message
    assert run(root, SLOW_LINEAR, "words.txt") == f"no matches for {SLOW_LINEAR!r}"


def test_the_deadline_is_checked_between_lines(root: Path):
    with pytest.raises(ToolExecutionError) as failed:
        search(Workspace(root), "a", "short.txt", None, SearchLimits(seconds=0))
    assert failed.value.message == (
        "search_files timed out after 0s (the search timeout) at short.txt:1; narrow the "
        "path or glob"
    )


async def test_long_globs_are_refused_before_compiling(root: Path):
    registry = ToolRegistry()
    register_workspace_tools(registry, root)
    for tool, arguments in [
        ("search_files", {"pattern": "a", "glob": "*" * 1001}),
        ("list_files", {"pattern": "a" * 1_000_000}),
    ]:
        with pytest.raises(ToolExecutionError, match="characters long, more than the 1,000"):
            await registry.invoke(tool, arguments, ToolContext(tool_call_id="c", tool_name=tool))


PATTERNS: dict[str, tuple[str, str]] = {
    # call id: (pattern, what the tool's reply starts with)
    "nested": (NESTED, "invalid regular expression"),
    "plus": ("(a+)+$", "1 match in 1 file\nas.txt:2: aaa"),
    "alt": ("(a|aa)*b", "1 match in 1 file\nas.txt:1: aaaa"),
    "star": ("(.*){1000}", "2 matches in 1 file"),
    "words": (ALTERNATION, "no matches for"),
    "huge": (HUGE_ALTERNATION, "the pattern 'word0|word1|"),
    "megabyte": (MEGABYTE, "the pattern 'aaaa"),
    "slow": (SLOW_LINEAR, "the pattern '[^x]{1000}[^y]{1000}b' is too complex"),
    "backref": (r"(a)\1", "invalid regular expression"),
}


async def test_a_worker_answers_every_pathological_pattern(
    client: Client, task_queue: str, tmp_path: Path
):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "as.txt").write_text("a" * 20_000 + "b\naaa\n")
    registry = ToolRegistry()
    register_workspace_tools(registry, root)
    steps: list[dict[str, Any]] = [
        calls(*((call_id, "search_files", {"pattern": p}) for call_id, (p, _) in PATTERNS.items())),
        answer("searched"),
    ]
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start(
            "search", model=write_script(tmp_path, steps)
        )
        result = await run.result()
        conversation = await run.conversation()
    assert result.status == RunStatus.COMPLETED and result.final_answer == "searched"
    replies = {m.tool_call_id: m.content or "" for m in conversation if m.role == "tool"}
    for call_id, (_, expected) in PATTERNS.items():
        assert expected in replies[call_id], (call_id, replies[call_id][:300])
