"""Confining paths to a workspace root.

Every path a model gives goes through `Workspace.locate` before any file is touched.
The lexical rules come first (NUL bytes, control characters, backslashes, drive
letters, `~`, `..`, absolute paths outside the root, Unicode forms that normalise into
any of those, lengths); then the path is walked beneath the root one open directory at
a time (`_resolve`): a symlink anywhere on the way must lead inside the root, and the
final object must be a regular file or a directory, never a device, FIFO or socket.
Refusals are non-retryable errors naming the path and the rule, so the model can
correct itself.
"""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path

from ._errors import WorkspacePathError, shorten as _shorten
from ._resolve import Located, Want, locate

# WorkspacePathError is re-exported: it is the error `Workspace` raises.
__all__ = ["MAX_PATH_BYTES", "Workspace", "WorkspacePathError"]

MAX_PATH_BYTES = 4096
"""Longest path accepted, in UTF-8 bytes (Linux's PATH_MAX)."""
MAX_NAME_BYTES = 255
"""Longest single component, in UTF-8 bytes (NAME_MAX)."""

_BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
_DRIVE = re.compile(r"^[A-Za-z]:")


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

    def locate(
        self,
        path: object,
        *,
        want: Want = "any",
        must_exist: bool = True,
        create_parents: bool = False,
    ) -> Located:
        """Where `path` ends, held open by a directory descriptor: the race-free way in.

        Open the file with `Located.open` (relative to the held directory, never through
        a symlink) instead of by name: nothing swapped meanwhile can redirect it.

        Args:
            path: What the model gave: relative to the root, or absolute inside it.
            want: `file` (a regular file), `dir` (a directory) or `any` of the two.
            must_exist: Refuse a path that does not exist.
            create_parents: Create missing parent directories (for writes).

        Raises:
            WorkspacePathError: a rule is broken, or the path does not exist / is of
                the wrong kind.
        """
        return locate(
            self._real,
            self._given,
            self.parts(path),
            path,
            want=want,
            must_exist=must_exist,
            create_parents=create_parents,
        )

    def resolve(self, path: object, *, want: Want = "any", must_exist: bool = True) -> Path:
        """The real path `path` names inside the workspace (a check; see `locate`).

        Opening the returned path by name later reopens the check-then-use gap; tools
        that touch files should use `locate` and `Located.open` instead.

        Args:
            path: What the model gave: relative to the root, or absolute inside it.
            want: `file` (a regular file), `dir` (a directory) or `any` of the two.
            must_exist: Refuse a path that does not exist. When False, the missing part
                is returned as plain names under the deepest existing directory.

        Raises:
            WorkspacePathError: a rule is broken, or the path does not exist / is of
                the wrong kind.
        """
        with self.locate(path, want=want, must_exist=must_exist) as located:
            return self._path(located.relative)

    def resolve_for_write(self, path: object) -> Path:
        """The real path to write `path` to, creating missing parent directories.

        Raises:
            WorkspacePathError: as for `resolve`, or the path names the root itself.
        """
        if not self.parts(path):
            raise WorkspacePathError(path, "is_a_directory", "it names the workspace root")
        with self.locate(path, want="file", must_exist=False, create_parents=True) as located:
            return self._path(located.relative)

    def _path(self, relative: str) -> Path:
        return self.root if relative == "." else self.root / relative
