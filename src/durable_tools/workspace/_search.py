"""`search_files`' engine: a regular expression over workspace files, with bounded work.

Patterns are RE2 syntax, matched by `google-re2`. Python's `re` (and the `regex` package)
backtrack: `(a+)+$` on a line of `a`s runs for ever, and `((((a{100}){100}){100}){100})`
never even finishes compiling, holding the GIL and growing by a gigabyte a second, where
no timeout can reach it. RE2 refuses what it cannot do in bounded time and memory
(backreferences, lookaround, a program over `Options.max_mem`, counted repetition over
1,000) when it compiles, and matches in time linear in the text, with the GIL released.

Linear is not yet short: the bound is the program's size times the text's length (about
4 ns per instruction and byte measured here, when RE2's DFA gives up and it falls back to
its NFA), and one call into RE2 cannot be interrupted. So each line is matched only when
that product is under `SearchLimits.max_line_work` (about a second); one deadline,
checked between lines, covers the whole search; files, bytes and matches are bounded too.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Any

import re2  # type: ignore[import-untyped]  # google-re2 ships no type hints

from durable_tools.tools._errors import ToolExecutionError

from ._errors import shorten
from ._files import is_binary, walk_fd
from ._glob import compile_glob
from ._paths import Workspace

__all__ = ["MAX_PATTERN_CHARS", "SearchLimits", "compile_pattern", "search"]

_MAX_LINE_CHARS = 300

MAX_PATTERN_CHARS = 10_000
"""Longest pattern `search_files` takes (longer ones are refused before RE2 sees them)."""

_MAX_MEM = 8 << 20
"""RE2's memory budget per pattern (its default, said here so it cannot drift): about
two thirds for the compiled program, the rest for the DFA's cache of states."""

_UNSUPPORTED = (
    "it has no backreferences (\\1), lookahead or lookbehind ((?=, (?!, (?<=, "
    "(?<!), atomic groups or possessive quantifiers, and \\Z (use \\z or $)"
)


@dataclass(frozen=True)
class SearchLimits:
    """How much one search may do.

    Attributes:
        seconds: Wall-clock time for the whole search, checked between lines.
        max_files: Most files read.
        max_bytes: Most bytes read, all files together.
        max_file_bytes: Files larger than this are skipped.
        max_matches: Most matches reported.
        max_output_bytes: Most bytes of output.
        max_line_work: Most (instructions of the compiled pattern) x (bytes of one line)
            matched in one uninterruptible call; RE2's worst case is linear in both, so
            this bounds how long one line can take, and so how far past `seconds` a
            search can run.
    """

    seconds: float = 10.0
    max_files: int = 10_000
    max_bytes: int = 64_000_000
    max_file_bytes: int = 4_000_000
    max_matches: int = 100
    max_output_bytes: int = 64_000
    max_line_work: int = 250_000_000


def _fail(message: str, **details: object) -> ToolExecutionError:
    return ToolExecutionError(message, retryable=False, details=dict(details))


def compile_pattern(pattern: str) -> Any:
    """`pattern` compiled by RE2, or a refusal the model can act on.

    Compiled outside google-re2's module cache (`re2.compile` keeps its last 128
    patterns, each up to `_MAX_MEM`, for the life of the process): a model sending many
    patterns must not pin a worker's memory.

    Raises:
        ToolExecutionError: the pattern is too long, too large once compiled, or not RE2
            syntax; the message names it and says why (not retryable).
    """
    shown = shorten(pattern)
    if len(pattern) > MAX_PATTERN_CHARS:
        raise _fail(
            f"the pattern {shown!r} is {len(pattern):,} characters long, more than the "
            f"{MAX_PATTERN_CHARS:,} search_files takes; search for a shorter pattern",
            pattern=shown,
        )
    options = re2.Options()
    options.max_mem = _MAX_MEM
    options.log_errors = False  # the refusal goes to the model, not to the worker's stderr
    options.never_capture = True  # only whether a line matches counts: no submatches
    try:
        # The public `compile` caches; `purge` right after drops that cache's hold (a
        # cache, so clearing it can only cost another caller a recompilation).
        compiled = re2.compile(pattern, options)
        re2.purge()
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise _fail(
            f"invalid regular expression {shown!r}: {reason} (search_files takes RE2 "
            f"syntax: {_UNSUPPORTED}; counted repetition goes up to {{1000}})",
            pattern=shown,
        ) from None
    except UnicodeEncodeError:  # a lone surrogate ("\ud800") has no UTF-8 form
        raise _fail(
            f"invalid regular expression {shown!r}: it holds a lone surrogate, which is "
            "not a character",
            pattern=shown,
        ) from None
    return compiled


def _files(
    workspace: Workspace, path: str, wanted: Callable[[str], bool] | None, limits: SearchLimits
) -> Generator[tuple[str, bytes | None], None, None]:
    """(relative path, content) of each file to search; content None when skipped."""
    with workspace.locate(path) as located:
        if located.name is not None:
            candidates: Iterator[tuple[str, str, int]] = iter(
                [(located.relative, located.name, located.dir_fd)]
            )
        else:
            prefix = "" if located.relative == "." else located.relative + "/"
            candidates = (
                (prefix + relative, entry.name, dir_fd)
                for relative, entry, dir_fd in walk_fd(located.dir_fd, True)
                if entry.is_file(follow_symlinks=False)
            )
        for relative, name, dir_fd in candidates:
            if wanted is not None and not wanted(name):
                continue
            try:
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
            except OSError:
                continue
            with os.fdopen(fd, "rb") as handle:
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode) or info.st_size > limits.max_file_bytes:
                    yield relative, None
                    continue
                yield relative, handle.read(limits.max_file_bytes + 1)


def search(
    workspace: Workspace, pattern: str, path: str, glob: str | None, limits: SearchLimits
) -> str:
    """Run one search; see `search_files` for what the model sees.

    Raises:
        ToolExecutionError: the pattern or glob is refused, the search ran out of time, or
            the pattern is too complex for a line this long.
    """
    compiled = compile_pattern(pattern)
    wanted = compile_glob(glob, "glob") if glob else None
    # Matching runs the program forward, then (for where a match starts) in reverse.
    program = max(1, compiled.programsize, compiled.reverseprogramsize)
    shown = shorten(pattern)
    deadline = time.monotonic() + limits.seconds
    lines: list[str] = []
    used = matches = in_files = files = read = 0
    stopped: str | None = None
    # closing(): a search that stops early closes the directories it holds at once.
    with contextlib.closing(_files(workspace, path, wanted, limits)) as found_files:
        for relative, data in found_files:
            if data is None or is_binary(data):
                continue
            if files >= limits.max_files or read + len(data) > limits.max_bytes:
                stopped = (
                    f"stopped after reading {files} files ({read} bytes), the most one search "
                    "reads; narrow the path or glob"
                )
                break
            files += 1
            read += len(data)
            hit = False
            for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
                if time.monotonic() >= deadline:
                    raise _fail(
                        f"search_files timed out after {limits.seconds:g}s (the search "
                        f"timeout) at {relative}:{number}; narrow the path or glob",
                        pattern=shown,
                        file=relative,
                        line=number,
                    )
                # A character is at most 4 bytes in UTF-8: encode only lines near the bound.
                if program * len(line) * 4 > limits.max_line_work:
                    size = len(line.encode())
                    if program * size > limits.max_line_work:
                        raise _fail(
                            f"the pattern {shown!r} is too complex for {relative}:{number}, a "
                            f"line of {size:,} bytes: it compiles to {program:,} RE2 "
                            "instructions, and matching that many on a line this long could "
                            "take too long; simplify the pattern (smaller counted "
                            "repetitions such as {1000}) or narrow the path or glob",
                            pattern=shown,
                            file=relative,
                            line=number,
                        )
                if compiled.search(line) is None:
                    continue
                if matches >= limits.max_matches:
                    stopped = f"stopped at the limit of {limits.max_matches}; narrow the search"
                    break
                shown_line = (
                    line if len(line) <= _MAX_LINE_CHARS else line[:_MAX_LINE_CHARS] + "..."
                )
                entry = f"{relative}:{number}: {shown_line}"
                if used + len(entry) > limits.max_output_bytes:
                    stopped = "stopped at the output limit; narrow the search"
                    break
                lines.append(entry)
                used += len(entry) + 1
                matches += 1
                hit = True
            in_files += hit
            if stopped:
                break
    if not lines:
        suffix = f" ({stopped})" if stopped else ""
        return f"no matches for {shown!r}{suffix}"
    head = f"{matches} match{'es' if matches != 1 else ''} in {in_files} file"
    head += "s" if in_files != 1 else ""
    if stopped:
        head += f" ({stopped})"
    return head + "\n" + "\n".join(lines)
