"""Confining paths to a workspace root.

Every path a model gives goes through `Workspace.resolve` before any file is touched.
The lexical rules come first (NUL bytes, control characters, backslashes, drive
letters, `~`, `..`, absolute paths outside the root, Unicode forms that normalise into
any of those, lengths); then each existing component is checked on disk: a symlink
anywhere on the way must resolve inside the root (by realpath), and the final object
must be a regular file or a directory, never a device, FIFO or socket. Refusals are
non-retryable errors naming the path and the rule, so the model can correct itself.
"""

from __future__ import annotations

import os
import re
import stat
import unicodedata
from pathlib import Path
from typing import Literal

from durable_tools.tools._errors import ToolExecutionError

__all__ = ["MAX_PATH_BYTES", "Workspace", "WorkspacePathError"]

MAX_PATH_BYTES = 4096
"""Longest path accepted, in UTF-8 bytes (Linux's PATH_MAX)."""
MAX_NAME_BYTES = 255
"""Longest single component, in UTF-8 bytes (NAME_MAX)."""

_BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
_DRIVE = re.compile(r"^[A-Za-z]:")

Want = Literal["file", "dir", "any"]


class WorkspacePathError(ToolExecutionError):
    """A path the workspace refuses. Not retryable: the same path fails again.

    Args:
        path: The path as given.
        rule: A short stable name of the broken rule (`parent`, `absolute`, `symlink`, ...).
        why: What is wrong, for the model.
    """

    def __init__(self, path: object, rule: str, why: str) -> None:
        shown = repr(path) if not isinstance(path, str) else repr(_shorten(path))
        super().__init__(
            f"path {shown} is refused ({rule}): {why}",
            retryable=False,
            details={"path": _shorten(str(path)), "rule": rule},
        )
        self.path = path
        self.rule = rule


def _shorten(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else f"{text[: limit - 20]}...({len(text)} characters)"


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "FIFO"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
    ):
        if test(mode):
            return name
    return "special file"


class Workspace:
    """A directory tools are confined to.

    Args:
        root: The workspace directory; it must exist. Symlinks in `root` itself are
            resolved once, here.

    Raises:
        ValueError: `root` is not an existing directory.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        given = os.path.abspath(os.fspath(root))
        real = os.path.realpath(given)
        if not os.path.isdir(real):
            raise ValueError(f"workspace root {given!r} is not an existing directory")
        self.root = Path(real)
        self._given = given
        self._real = real

    def __repr__(self) -> str:
        return f"Workspace({self._real!r})"

    # ---------------------------------------------------------------- checking

    def inside(self, real: str | os.PathLike[str]) -> bool:
        """Whether an already-resolved path is the root or under it."""
        text = os.fspath(real)
        return text == self._real or text.startswith(self._real.rstrip("/") + "/")

    def display(self, real: str | os.PathLike[str]) -> str:
        """A resolved path as the model should see it: relative to the root."""
        relative = os.path.relpath(os.fspath(real), self._real)
        return "." if relative == "." else relative

    def parts(self, path: object) -> list[str]:
        """The components of `path` relative to the root, after the lexical rules.

        Raises:
            WorkspacePathError: a rule is broken.
        """
        if not isinstance(path, str):
            raise WorkspacePathError(path, "type", "a path must be a string")
        self._lexical(path, path)
        normalized = unicodedata.normalize("NFKC", path)
        if normalized != path:
            try:
                self._lexical(normalized, normalized)
                self._components(normalized, normalized)
            except WorkspacePathError as error:
                raise WorkspacePathError(
                    path,
                    "unicode",
                    f"after Unicode normalization (NFKC) it reads {_shorten(normalized)!r}, "
                    f"which is refused: {error.message}",
                ) from None
        return self._components(path, path)

    def _lexical(self, path: str, shown: str) -> None:
        if "\x00" in path:
            raise WorkspacePathError(shown, "nul", "it contains a NUL byte")
        if len(path.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES:
            raise WorkspacePathError(shown, "too_long", f"it is longer than {MAX_PATH_BYTES} bytes")
        for char in path:
            if unicodedata.category(char) == "Cc" or char in _BIDI_CONTROLS:
                raise WorkspacePathError(
                    shown,
                    "control_character",
                    f"it contains the control character U+{ord(char):04X}",
                )
        if "\\" in path:
            raise WorkspacePathError(
                shown,
                "backslash",
                "it contains a backslash; Windows-style paths are refused, use '/' "
                "relative to the workspace root",
            )
        if _DRIVE.match(path):
            raise WorkspacePathError(shown, "drive", "drive letters are refused; paths are POSIX")
        if path.startswith("~"):
            raise WorkspacePathError(
                shown,
                "home",
                "'~' is not expanded; give a path relative to the workspace root",
            )

    def _components(self, path: str, shown: str) -> list[str]:
        relative = path
        if path.startswith("/"):
            for root in (self._real, self._given):
                if path.rstrip("/") == root or path.startswith(root.rstrip("/") + "/"):
                    relative = path[len(root) :]
                    break
            else:
                raise WorkspacePathError(
                    shown,
                    "absolute",
                    f"it is an absolute path outside the workspace root {self._real}",
                )
        parts = [p for p in relative.split("/") if p not in ("", ".")]
        for part in parts:
            if part == "..":
                raise WorkspacePathError(
                    shown, "parent", "'..' components are not allowed in workspace paths"
                )
            if len(part.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
                raise WorkspacePathError(
                    shown, "too_long", f"a component is longer than {MAX_NAME_BYTES} bytes"
                )
        return parts

    # -------------------------------------------------------------- resolving

    def resolve(self, path: object, *, want: Want = "any", must_exist: bool = True) -> Path:
        """The real path `path` names inside the workspace.

        Args:
            path: What the model gave: relative to the root, or absolute inside it.
            want: `file` (a regular file), `dir` (a directory) or `any` of the two.
            must_exist: Refuse a path that does not exist. When False, the missing part
                is returned as plain names under the deepest existing directory (for
                writes of new files).

        Raises:
            WorkspacePathError: a rule is broken, or the path does not exist / is of
                the wrong kind.
        """
        parts = self.parts(path)
        current = self._real
        for index, part in enumerate(parts):
            candidate = os.path.join(current, part)
            try:
                info = os.lstat(candidate)
            except FileNotFoundError:
                if must_exist:
                    raise WorkspacePathError(
                        path, "not_found", f"{'/'.join(parts[: index + 1])!r} does not exist"
                    ) from None
                return Path(os.path.join(candidate, *parts[index + 1 :]))
            except NotADirectoryError:
                raise WorkspacePathError(
                    path, "not_a_directory", f"{'/'.join(parts[:index])!r} is not a directory"
                ) from None
            if stat.S_ISLNK(info.st_mode):
                target = os.path.realpath(candidate)
                if not self.inside(target):
                    raise WorkspacePathError(
                        path,
                        "symlink",
                        f"{'/'.join(parts[: index + 1])!r} is a symlink to {target}, "
                        "outside the workspace",
                    )
                current = target
                if not os.path.lexists(target):
                    if must_exist:
                        raise WorkspacePathError(
                            path,
                            "not_found",
                            f"{'/'.join(parts[: index + 1])!r} is a dangling symlink",
                        )
                    return Path(os.path.join(target, *parts[index + 1 :]))
            else:
                current = candidate
            if index < len(parts) - 1 and not os.path.isdir(current):
                raise WorkspacePathError(
                    path,
                    "not_a_directory",
                    f"{'/'.join(parts[: index + 1])!r} is not a directory",
                )
        real = os.path.realpath(current)
        if not self.inside(real):  # belt and braces: a race, or a chain of links
            raise WorkspacePathError(path, "outside", f"it resolves to {real}, outside the root")
        self._check_kind(path, real, want)
        return Path(real)

    def _check_kind(self, path: object, real: str, want: Want) -> None:
        try:
            mode = os.stat(real).st_mode
        except FileNotFoundError:
            return
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raise WorkspacePathError(
                path,
                "special_file",
                f"it is a {_kind(mode)}; only regular files and directories are allowed",
            )
        if want == "file" and stat.S_ISDIR(mode):
            raise WorkspacePathError(path, "is_a_directory", "it is a directory, not a file")
        if want == "dir" and not stat.S_ISDIR(mode):
            raise WorkspacePathError(path, "not_a_directory", "it is a file, not a directory")

    def resolve_for_write(self, path: object) -> Path:
        """The real path to write `path` to, creating missing parent directories.

        The target may be new; if it exists it must be a regular file. Every existing
        component, the parent included, is checked as in `resolve`, so a symlinked parent
        that leads outside is refused before anything is created.

        Raises:
            WorkspacePathError: as for `resolve`, or the path names the root itself.
        """
        if not self.parts(path):
            raise WorkspacePathError(path, "is_a_directory", "it names the workspace root")
        target = self.resolve(path, want="file", must_exist=False)
        parent = target.parent
        missing: list[Path] = []
        while not os.path.lexists(parent):
            missing.append(parent)
            parent = parent.parent
        if not self.inside(os.path.realpath(parent)) or not parent.is_dir():
            raise WorkspacePathError(path, "outside", "its parent is not a workspace directory")
        for directory in reversed(missing):
            os.mkdir(directory)
            if os.path.realpath(directory) != str(directory):
                raise WorkspacePathError(path, "symlink", "a directory changed while creating it")
        return target
