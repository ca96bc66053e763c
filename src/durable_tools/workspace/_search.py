"""`search_files`' engine: a regular expression over workspace files, with bounded work.

Python's `re` backtracks without limit and holds the GIL while it does, so one
pathological pattern (`(a+)+$` on a line of `a`s) froze a whole worker, heartbeats and
all, and an activity timeout could not stop it (the thread spun on). The `regex`
package takes the same syntax, and gives two things `re` lacks: `timeout=` (the match
raises `TimeoutError`) and `concurrent=True` (the GIL is released while it matches, so
the worker's event loop keeps running). One deadline covers the whole search, so a
search ends by itself even when nobody waits for it any more. Files, bytes and matches
are bounded too.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import stat
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass

import regex  # type: ignore[import-untyped]  # no stubs in the project's dev set

from durable_tools.tools._errors import ToolExecutionError

from ._files import is_binary, walk_fd
from ._paths import Workspace

__all__ = ["SearchLimits", "search"]

_MAX_LINE_CHARS = 300


@dataclass(frozen=True)
class SearchLimits:
    """How much one search may do.

    Attributes:
        seconds: Wall-clock time for the whole search, matching included.
        max_files: Most files read.
        max_bytes: Most bytes read, all files together.
        max_file_bytes: Files larger than this are skipped.
        max_matches: Most matches reported.
        max_output_bytes: Most bytes of output.
    """

    seconds: float = 10.0
    max_files: int = 10_000
    max_bytes: int = 64_000_000
    max_file_bytes: int = 4_000_000
    max_matches: int = 100
    max_output_bytes: int = 64_000


def _fail(message: str, **details: object) -> ToolExecutionError:
    return ToolExecutionError(message, retryable=False, details=dict(details))


def _files(
    workspace: Workspace, path: str, glob: str | None, limits: SearchLimits
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
            if glob and not fnmatch.fnmatchcase(name, glob):
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
        ToolExecutionError: the pattern is invalid, or the search ran out of time.
    """
    try:
        compiled = regex.compile(pattern, regex.VERSION0)
    except (regex.error, OverflowError, RecursionError) as exc:
        raise _fail(f"invalid regular expression {pattern!r}: {exc}") from None
    deadline = time.monotonic() + limits.seconds
    lines: list[str] = []
    used = matches = in_files = files = read = 0
    stopped: str | None = None
    # closing(): a search that stops early closes the directories it holds at once.
    with contextlib.closing(_files(workspace, path, glob, limits)) as found_files:
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
                remaining = deadline - time.monotonic()
                try:
                    if remaining <= 0:
                        raise TimeoutError
                    found = compiled.search(line, timeout=remaining, concurrent=True)
                except TimeoutError:
                    raise _fail(
                        f"search_files timed out after {limits.seconds:g}s (the search timeout) "
                        f"at {relative}:{number}: the pattern {pattern!r} is too slow on this "
                        "text (nested repetition such as '(a+)+' backtracks exponentially); "
                        "simplify the pattern or narrow the path or glob",
                        pattern=pattern,
                        file=relative,
                        line=number,
                    ) from None
                if found is None:
                    continue
                if matches >= limits.max_matches:
                    stopped = f"stopped at the limit of {limits.max_matches}; narrow the search"
                    break
                shown = line if len(line) <= _MAX_LINE_CHARS else line[:_MAX_LINE_CHARS] + "..."
                entry = f"{relative}:{number}: {shown}"
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
        return f"no matches for {pattern!r}{suffix}"
    head = f"{matches} match{'es' if matches != 1 else ''} in {in_files} file"
    head += "s" if in_files != 1 else ""
    if stopped:
        head += f" ({stopped})"
    return head + "\n" + "\n".join(lines)
