"""The error every workspace refusal raises, and the small helpers that word it."""

from __future__ import annotations

import stat

from durable_tools.tools._errors import ToolExecutionError

__all__ = ["WorkspacePathError", "kind_of", "shorten"]


def shorten(text: str, limit: int = 160) -> str:
    """`text`, cut to about `limit` characters with its full length said."""
    return text if len(text) <= limit else f"{text[: limit - 20]}...({len(text)} characters)"


def kind_of(mode: int) -> str:
    """A special file's kind in words, for refusals."""
    for test, name in (
        (stat.S_ISFIFO, "FIFO"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
    ):
        if test(mode):
            return name
    return "special file"


class WorkspacePathError(ToolExecutionError):
    """A path the workspace refuses. Not retryable: the same path fails again.

    Args:
        path: The path as given.
        rule: A short stable name of the broken rule (`parent`, `absolute`, `symlink`, ...).
        why: What is wrong, for the model.
    """

    def __init__(self, path: object, rule: str, why: str) -> None:
        shown = repr(path) if not isinstance(path, str) else repr(shorten(path))
        super().__init__(
            f"path {shown} is refused ({rule}): {why}",
            retryable=False,
            details={"path": shorten(str(path)), "rule": rule},
            user_error=True,  # the caller named the path; the workspace is fine
        )
        self.path = path
        self.rule = rule
