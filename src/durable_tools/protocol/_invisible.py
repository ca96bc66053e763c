"""The characters text shown to people never carries as they are: zero-width and
bidirectional formatting characters. They print as nothing, or reorder what follows on
screen, so that `pub` and `pub\\u200b` look alike and an RLO turns `pay 700 cents` around.
Every place that shows a value someone else wrote (the CLI's `terminal_safe`, the run's
details in the Temporal UI, the inbox's pages) shows them as visible escapes (`\\u202e`),
from this one set.
"""

from __future__ import annotations

import re

__all__ = ["INVISIBLE_CHARACTERS", "show_invisible"]

INVISIBLE_CHARACTERS = "\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff"
"""As the body of a regular-expression character class: the Arabic letter mark, zero
width space, joiners and the left-to-right / right-to-left marks (U+200B-U+200F), the bidi
embeddings and overrides (U+202A-U+202E), the word joiner, invisible operators and bidi
isolates (U+2060-U+2069), and the byte order mark / zero width no-break space (U+FEFF)."""

_INVISIBLE = re.compile(f"[{INVISIBLE_CHARACTERS}]")


def _escaped(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def show_invisible(text: str) -> str:
    """`text` with each invisible character as its visible escape (`\\u200b`)."""
    return _INVISIBLE.sub(_escaped, text)
