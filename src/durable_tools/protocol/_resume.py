"""The commands that resume a waiting call, as every surface prints them (the CLI, the
inbox, the UI's details, the OAuth pages).

Ids are passed as one shell word each: an operator pastes the command into a shell, and
a call id is the model's, a run id may be an app's (`$(...)`, backticks and `;` stay
inert). `word` quotes one id; the UI's details pass one that also keeps its markdown code
span whole.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable

__all__ = ["answer_command", "reissue_command"]

Quote = Callable[[str], str]


def answer_command(run_id: str, call_id: str, *, word: Quote = shlex.quote) -> str:
    """How the user answers an MCP server's question (`durable-tools answer`)."""
    return f"durable-tools answer {word(run_id)} {word(call_id)} --accept '{{...}}'"


def reissue_command(run_id: str, call_id: str, *, word: Quote = shlex.quote) -> str:
    """How a fresh authorization link is asked for (`durable-tools auth reissue`)."""
    return f"durable-tools auth reissue {word(run_id)} {word(call_id)}"
