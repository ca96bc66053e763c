"""Reading a tool's description and parameter descriptions from its Google docstring.

Only what the model needs is extracted: the text before the first section, and the
`Args:` entries. Anything the parser does not recognise is left alone rather than
guessed at, because a wrong description misleads the model more than a missing one.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field

__all__ = ["Docstring", "parse_docstring"]

_SECTION = re.compile(r"^([A-Z][A-Za-z ]*):\s*$")
_ARGS_SECTIONS = frozenset({"Args", "Arguments", "Parameters", "Params"})
# `name: text`, `name (type): text`, `*name: text`; the type in parentheses is dropped
# because the schema already says it, from the annotation.
_ARG_LINE = re.compile(
    r"^\*{0,2}(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*(\([^)]*\))?\s*:\s*(?P<text>.*)$"
)


@dataclass(frozen=True)
class Docstring:
    """What a docstring says about a tool."""

    description: str = ""
    """The text before the first section (summary and extended description)."""
    params: dict[str, str] = field(default_factory=dict)
    """Parameter name to description, from the `Args:` section."""


def parse_docstring(doc: str | None) -> Docstring:
    """Parse a Google-style docstring.

    Args:
        doc: The raw docstring (`fn.__doc__`), or None.

    Returns:
        The description and the per-parameter descriptions.
    """
    if not doc:
        return Docstring()
    lines = inspect.cleandoc(doc).splitlines()
    description: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    arg_indent: int | None = None
    for line in lines:
        header = _SECTION.match(line)
        if header and not line.startswith(" "):
            section, current, arg_indent = header.group(1), None, None
            continue
        if section is None:
            description.append(line)
            continue
        if section not in _ARGS_SECTIONS or not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if arg_indent is None:
            arg_indent = indent
        entry = _ARG_LINE.match(line.strip()) if indent == arg_indent else None
        if entry:
            current = entry.group("name")
            params[current] = entry.group("text").strip()
        elif current is not None:
            # A continuation line: deeper indentation under the current entry.
            params[current] = f"{params[current]} {line.strip()}".strip()
    return Docstring(description="\n".join(description).strip(), params=params)
