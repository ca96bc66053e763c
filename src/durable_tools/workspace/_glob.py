"""Globs from the model (`list_files`' pattern, `search_files`' glob), bounded in size.

`fnmatch.fnmatchcase` compiles each glob to a `re` pattern while holding the GIL (a 1 MB
glob took 2.4 s) and keeps up to 32,768 of them in a process-wide cache for the worker's
lifetime, so a model sending long, distinct globs could stall the worker and pin its
memory. A glob is compiled here once per call, with the same meaning as
`fnmatch.fnmatchcase`, after its length is checked; `fnmatch.translate`'s patterns match
in time polynomial in the name, and names and relative paths are short.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable

from durable_tools.tools._errors import ToolExecutionError

__all__ = ["MAX_GLOB_CHARS", "compile_glob"]

MAX_GLOB_CHARS = 1_000
"""Longest glob a tool takes: far more than any file name pattern needs."""


def compile_glob(glob: str, argument: str) -> Callable[[str], bool]:
    """A test of names against `glob`, exactly as `fnmatch.fnmatchcase(name, glob)`.

    Args:
        glob: The glob the model sent.
        argument: The tool argument it came in, for the error message.

    Raises:
        ToolExecutionError: the glob is longer than `MAX_GLOB_CHARS` (not retryable).
    """
    if len(glob) > MAX_GLOB_CHARS:
        raise ToolExecutionError(
            f"the {argument} glob is {len(glob):,} characters long, more than the "
            f"{MAX_GLOB_CHARS:,} a glob may have; use a shorter one",
            retryable=False,
        )
    match = re.compile(fnmatch.translate(glob)).match
    return lambda name: match(name) is not None
