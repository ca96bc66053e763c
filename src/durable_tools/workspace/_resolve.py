"""Race-free resolution: walking a path beneath the root one directory descriptor at a time.

Checking a path and then opening it by name leaves a gap: a process that swaps a
directory for a symlink in between sends the open outside the root. So nothing here
opens a path by name from the root. The walk holds an open descriptor of each directory
it has entered and opens the next component relative to it with `O_NOFOLLOW`, so the
kernel never follows a symlink for us: a symlink is read with `readlinkat` and its target
is walked by the same rules (an absolute target must lie under the root, and `..` may
not climb above it). Whatever is swapped, and whenever, the walk either refuses or ends
on an object that really is under the root. The caller gets the descriptor of the last
directory and the final name, and opens that name with `O_NOFOLLOW` relative to it.
(Linux's `openat2(RESOLVE_BENEATH)` does the same in the kernel, but Python does not
expose it, it refuses absolute links that stay inside, and it gives one errno for every
refusal; walking by hand is portable and lets each refusal name its rule.)
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from dataclasses import dataclass, field
from typing import Literal

from ._errors import WorkspacePathError, kind_of

__all__ = ["DIR_FLAGS", "MAX_SYMLINKS", "Located", "Want", "locate"]

Want = Literal["file", "dir", "any"]

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
"""How every directory on a walk is opened: never through a symlink."""
MAX_SYMLINKS = 40
"""Most symlinks followed on one path (Linux's own limit), so a loop ends."""


@dataclass
class Located:
    """Where a path ends, held open: close it (or use it as a context manager).

    Attributes:
        dir_fd: An open descriptor of the directory the path ends in (`name is None`)
            or of the directory holding the final `name`.
        name: The final component inside `dir_fd`, or None when the path is a directory.
        relative: The real path under the root, `.` for the root itself.
        exists: Whether `name` exists (always True for directories).
        missing: Components after `name` that do not exist yet (only when a missing path
            is accepted without creating its directories).
    """

    dir_fd: int
    name: str | None
    relative: str
    exists: bool = True
    missing: list[str] = field(default_factory=list)

    def open(self, path: object, flags: int = os.O_RDONLY, mode: int = 0o644) -> int:
        """Open the final file relative to `dir_fd`, never through a symlink or a FIFO.

        Raises:
            WorkspacePathError: it is not a regular file (now), e.g. swapped for a link.
        """
        if self.name is None:
            raise WorkspacePathError(path, "is_a_directory", "it is a directory, not a file")
        try:
            fd = os.open(
                self.name,
                flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                mode,
                dir_fd=self.dir_fd,
            )
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise WorkspacePathError(
                    path, "symlink", "it became a symlink while it was being opened"
                ) from None
            raise
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            raise WorkspacePathError(path, "special_file", "it is not a regular file")
        return fd

    def close(self) -> None:
        """Close the held directory descriptor."""
        with contextlib.suppress(OSError):
            os.close(self.dir_fd)

    def __enter__(self) -> Located:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _symlink_target(root_real: str, root_given: str, target: str) -> list[str] | None:
    """An absolute link target as components under the root, or None if it leaves it."""
    for root in (root_real, root_given):
        base = root.rstrip("/")
        if target == base or target.startswith(base + "/"):
            return target[len(base) :].split("/")
    return None


def locate(
    root_real: str,
    root_given: str,
    parts: list[str],
    path: object,
    *,
    want: Want = "any",
    must_exist: bool = True,
    create_parents: bool = False,
) -> Located:
    """Walk `parts` beneath the root without ever letting the kernel follow a symlink.

    Args:
        root_real: The root's real path (opened once per call).
        root_given: The root as the user gave it, also accepted in absolute link targets.
        parts: The components after the lexical rules (no `..`, no empty ones).
        path: The path as given, for error messages.
        want: `file` (a regular file), `dir` (a directory) or `any` of the two.
        must_exist: Refuse a path that does not exist.
        create_parents: Create missing directories on the way (for writes of new files).

    Raises:
        WorkspacePathError: a symlink leads outside, a component is of the wrong kind,
            or the path does not exist when it must.
    """
    stack = [os.open(root_real, DIR_FLAGS)]
    names: list[str] = []
    pending = list(parts)
    hops = 0
    link: tuple[str, str] | None = None  # the last symlink followed, for messages

    def here(part: str) -> str:
        return "/".join([*names, part])

    try:
        final: str | None = None
        while pending:
            part = pending.pop(0)
            last = not pending
            if part in ("", "."):
                continue
            if part == "..":  # only ever from a symlink's target
                if len(stack) == 1:
                    name, target = link or ("..", "..")
                    raise WorkspacePathError(
                        path,
                        "symlink",
                        f"{name!r} is a symlink to {target}, outside the workspace",
                    )
                os.close(stack.pop())
                names.pop()
                continue
            try:
                info = os.stat(part, dir_fd=stack[-1], follow_symlinks=False)
            except FileNotFoundError:
                if must_exist:
                    raise WorkspacePathError(
                        path, "not_found", f"{here(part)!r} does not exist"
                    ) from None
                if last:
                    final = part
                    break
                if not create_parents:
                    shown = "/".join([*names, part, *pending])
                    return Located(stack.pop(), part, shown, exists=False, missing=pending)
                with contextlib.suppress(FileExistsError):  # made meanwhile: walk it
                    os.mkdir(part, dir_fd=stack[-1])
                pending.insert(0, part)
                continue
            if stat.S_ISLNK(info.st_mode):
                hops += 1
                if hops > MAX_SYMLINKS:
                    raise WorkspacePathError(path, "symlink", "too many levels of symlinks")
                target = os.readlink(part, dir_fd=stack[-1])
                link = (here(part), target)
                if target.startswith("/"):
                    inside = _symlink_target(root_real, root_given, target)
                    if inside is None:
                        raise WorkspacePathError(
                            path,
                            "symlink",
                            f"{here(part)!r} is a symlink to {target}, outside the workspace",
                        )
                    while len(stack) > 1:
                        os.close(stack.pop())
                    names.clear()
                    pending = inside + pending
                else:
                    pending = target.split("/") + pending
                if not pending or all(p in ("", ".") for p in pending):
                    pending = []  # the link names a directory on the walk: end there
                continue
            if stat.S_ISDIR(info.st_mode):
                try:
                    fd = os.open(part, DIR_FLAGS, dir_fd=stack[-1])
                except OSError as error:
                    if error.errno not in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT):
                        raise
                    # Swapped since the stat: look at it again (bounded like a link).
                    hops += 1
                    if hops > MAX_SYMLINKS:
                        raise WorkspacePathError(
                            path, "changed", f"{here(part)!r} keeps changing"
                        ) from None
                    pending.insert(0, part)
                    continue
                stack.append(fd)
                names.append(part)
                continue
            if not last:
                raise WorkspacePathError(
                    path, "not_a_directory", f"{here(part)!r} is not a directory"
                )
            if not stat.S_ISREG(info.st_mode):
                raise WorkspacePathError(
                    path,
                    "special_file",
                    f"it is a {kind_of(info.st_mode)}; only regular files and directories "
                    "are allowed",
                )
            final = part
        relative = "/".join(names) or "."
        if final is None:
            if want == "file":
                raise WorkspacePathError(path, "is_a_directory", "it is a directory, not a file")
            return Located(stack.pop(), None, relative)
        exists = True
        try:
            os.stat(final, dir_fd=stack[-1], follow_symlinks=False)
        except FileNotFoundError:
            exists = False
        if want == "dir" and exists:
            raise WorkspacePathError(path, "not_a_directory", "it is a file, not a directory")
        shown = final if relative == "." else f"{relative}/{final}"
        return Located(stack.pop(), final, shown, exists=exists)
    finally:
        for fd in stack:
            os.close(fd)
