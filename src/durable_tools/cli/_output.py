"""Everything the command line prints goes through here.

Text goes through `terminal_safe` (newlines kept, every other control character shown as
an escape), so no value from a model, a tool or a run can steer the reader's terminal.
JSON is printed with ASCII escapes: the same data, and just as inert on a terminal.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime
from typing import Any

from durable_tools.client.render._text import terminal_safe

__all__ = ["dump_json", "echo"]


def echo(text: str = "", *, err: bool = False, flush: bool = False) -> None:
    """Print one (possibly multi-line) text, terminal-safe, to stdout or stderr."""
    print(terminal_safe(text, multiline=True), file=sys.stderr if err else sys.stdout, flush=flush)


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def dump_json(value: Any) -> None:
    """Print `value` as one indented JSON document on stdout."""
    print(json.dumps(value, indent=2, ensure_ascii=True, default=_json_default))
