"""Making what a provider (or anyone with the callback URL) sends fit to show and to hand on.

The `error` and `error_description` of a callback come from the query string: anyone can put
anything there, and they reach the callback page, the logs and, through the run, the model.
They are length-bounded, stripped of control and invisible formatting characters (terminal
escapes, bidi overrides, zero-width characters), and an error code keeps only the characters
RFC 6749 codes use.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["MAX_DESCRIPTION", "MAX_ERROR_CODE", "clean_description", "clean_error_code"]

MAX_ERROR_CODE = 64
"""Longest error code kept; registered codes are under 30 characters."""
MAX_DESCRIPTION = 200
"""Longest description kept, in characters."""

_NOT_CODE = re.compile(r"[^A-Za-z0-9._-]+")
# Cc controls, Cf formatting (bidi overrides, zero-width), Cs surrogates, Co private use,
# Cn unassigned; Zl/Zp line and paragraph separators.
_DROPPED = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def clean_error_code(raw: str) -> str:
    """An OAuth error code as a plain token: `[A-Za-z0-9._-]`, at most 64 characters.

    Anything else becomes `_` (`access denied` -> `access_denied`); nothing left gives
    `unknown_error`.
    """
    code = _NOT_CODE.sub("_", raw[: MAX_ERROR_CODE * 4]).strip("_")[:MAX_ERROR_CODE]
    return code or "unknown_error"


def clean_description(raw: str, limit: int = MAX_DESCRIPTION) -> str:
    """Free text on one line: controls and invisible characters dropped (whitespace-like ones
    become a space), runs of spaces collapsed, cut to `limit` characters with an ellipsis."""
    kept = []
    for char in raw[: limit * 8]:  # bounded work on a hostile megabyte
        category = unicodedata.category(char)
        if category in _DROPPED:
            kept.append(" " if char.isspace() or category in ("Cc", "Zl", "Zp") else "")
        else:
            kept.append(" " if char.isspace() else char)
    text = " ".join("".join(kept).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
