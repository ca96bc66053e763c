"""The install command for an optional feature (an extra), one that works as written, and
the error that carries it.

durable-tools is not on a package registry, so `pip install 'durable-tools[inbox]'` fails
for anyone who installed it from a checkout or a wheel. The packages an extra stands for
are in the installed distribution's metadata: naming them gives a command that works
wherever pip can reach a registry.
"""

from __future__ import annotations

import importlib.metadata
import re
import shlex

__all__ = ["MissingExtraError", "install_hint", "missing_extra_in"]

_EXTRA_MARKER = re.compile(r"""extra\s*==\s*['"]([^'"]+)['"]""")


def install_hint(*extras: str) -> str:
    """`pip install '<req>' ...` for the packages of `extras`, from the installed metadata.

    Falls back to installing the extras from a checkout when the metadata is missing (run
    from a source tree that was never installed).
    """
    try:
        requirements = importlib.metadata.requires("durable-tools") or []
    except importlib.metadata.PackageNotFoundError:
        requirements = []
    wanted: list[str] = []
    for requirement in requirements:
        spec, _, marker = requirement.partition(";")
        found = _EXTRA_MARKER.search(marker)
        package = spec.strip().replace(" ", "")
        if found and found.group(1) in extras and package not in wanted:
            wanted.append(package)
    if not wanted:
        return f"pip install -e '.[{','.join(extras)}]' (from a durable-tools checkout)"
    return "pip install " + " ".join(shlex.quote(r) for r in wanted)


class MissingExtraError(ImportError):
    """An optional feature's packages are not installed: the message says what needs them
    and the command that installs them (`install_hint`), and is all a user needs to read."""


def missing_extra_in(error: BaseException) -> MissingExtraError | None:
    """The `MissingExtraError` behind `error` (itself, or what caused it), if any.

    A tools module that attaches an MCP server without the `mcp` extra fails with the
    error somewhere in its chain; the command line then prints that one line, not the
    traceback.
    """
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, MissingExtraError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None
