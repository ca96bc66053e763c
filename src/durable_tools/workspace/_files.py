"""File work on open descriptors: walking directories, atomic replaces, bounded reads.

Everything takes a directory descriptor from `Workspace.locate` and names relative to
it, never a path from the root, so nothing swapped meanwhile can lead outside.
"""

from __future__ import annotations

import contextlib
import os
import stat
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

from ._errors import WorkspacePathError
from ._resolve import DIR_FLAGS

__all__ = ["BINARY_SNIFF", "Window", "is_binary", "read_window", "replace_at", "walk_fd"]

BINARY_SNIFF = 8192
"""A file with a NUL byte in its first this many bytes is binary."""
_PIECE = 65536
_COUNT_CHUNK = 1 << 20
SKIP_DIRS = frozenset({".git", ".hg", ".svn"})


def is_binary(head: bytes) -> bool:
    """Whether the first bytes of a file say it is binary (a NUL byte)."""
    return b"\x00" in head[:BINARY_SNIFF]


def walk_fd(
    dir_fd: int, recursive: bool, prefix: str = ""
) -> Iterator[tuple[str, os.DirEntry[str], int]]:
    """Entries under the open directory `dir_fd`, sorted, never following symlinks.

    Yields (relative path, entry, descriptor of the entry's directory); the descriptor
    is open only until the next item is asked for.
    """
    try:
        with os.scandir(dir_fd) as scan:
            entries = sorted(scan, key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        relative = f"{prefix}{entry.name}"
        yield relative, entry, dir_fd
        if recursive and entry.is_dir(follow_symlinks=False) and entry.name not in SKIP_DIRS:
            try:
                sub = os.open(entry.name, DIR_FLAGS, dir_fd=dir_fd)
            except OSError:  # swapped for a symlink or gone since the listing: skip it
                continue
            try:
                yield from walk_fd(sub, True, relative + "/")
            finally:
                os.close(sub)


def replace_at(dir_fd: int, name: str, data: bytes, path: str) -> None:
    """Write `data` to `name` in `dir_fd` atomically (a temporary file renamed over it).

    The rename replaces the directory entry, never the old file's contents: a hard link
    to a file elsewhere is cut, not written through.
    """
    mode = 0o644
    with contextlib.suppress(FileNotFoundError):
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        if not stat.S_ISREG(info.st_mode):
            raise WorkspacePathError(path, "special_file", "it is not a regular file")
        mode = stat.S_IMODE(info.st_mode)
    temporary = f".durable-tools-{uuid.uuid4().hex[:12]}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temporary, flags, mode, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary, dir_fd=dir_fd)
        raise


@dataclass
class Window:
    """What `read_window` read.

    Attributes:
        data: The bytes shown (at most the budget).
        total: Lines in the file (a last line without a newline counts).
        last: The last line shown whole, or `first - 1` if none was.
        cut: (line, byte) where a line too long for the budget was cut, or None.
        cut_line_bytes: The length of that line, newline excluded.
    """

    data: bytes
    total: int
    last: int
    cut: tuple[int, int] | None = None
    cut_line_bytes: int = 0


def _char_boundary(data: bytes, end: int) -> int:
    """`end`, moved back so it does not split a UTF-8 character."""
    back = end
    while back > 0 and end - back < 4 and back < len(data) and (data[back] & 0xC0) == 0x80:
        back -= 1
    return back if back > 0 else end


def read_window(fd: int, first: int, last: int | None, byte_offset: int, budget: int) -> Window:
    """Lines `first`..`last` of an open file, in at most `budget` bytes of memory for them.

    The file is streamed in pieces, never held whole: a line longer than the budget is
    cut (at a character boundary) when it is the first line shown, and `byte_offset`
    skips that many bytes of line `first` to read on from such a cut.
    """
    with os.fdopen(os.dup(fd), "rb", buffering=_PIECE) as handle:
        out = bytearray()
        number, column = 1, 0  # the line being read, and bytes of it read so far
        line_start = 0  # len(out) when the current line began
        shown_last = first - 1
        cut: tuple[int, int] | None = None
        cut_bytes = 0
        stop = broke = False
        while piece := handle.readline(_PIECE):
            ends = piece.endswith(b"\n")
            if not stop and number >= first and (last is None or number <= last):
                if column == 0:
                    line_start = len(out)
                skip = max(byte_offset - column, 0) if number == first else 0
                part = piece[skip:]
                if len(out) + len(part) <= budget:
                    out += part
                    if ends:
                        shown_last = number
                elif number == first:  # the first line shown is longer than the budget
                    end = _char_boundary(part, budget - len(out))
                    out += part[:end]
                    cut = (number, column + skip + end)
                    stop = True
                else:  # a later line does not fit: end at the line before it
                    del out[line_start:]
                    stop = True
            column += len(piece)
            if ends:
                if cut is not None and cut[0] == number:
                    cut_bytes = column - 1
                number += 1
                column = 0
                if stop or (last is not None and number > last):
                    broke = True
                    break
        if not broke:
            total = number - (0 if column else 1)
            if column:  # a last line without a newline
                if cut is not None and cut[0] == number:
                    cut_bytes = column
                elif not stop and number >= first and (last is None or number <= last):
                    shown_last = number
            return Window(bytes(out), total, shown_last, cut, cut_bytes)
        total = number - 1
        tail = b"\n"
        while chunk := handle.read(_COUNT_CHUNK):  # count the rest without keeping it
            total += chunk.count(b"\n")
            tail = chunk
        if not tail.endswith(b"\n"):
            total += 1
        return Window(bytes(out), total, shown_last, cut, cut_bytes)
