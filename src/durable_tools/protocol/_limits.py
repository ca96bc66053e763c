"""What a run accepts from outside, and how large a payload it may build.

Everything a caller, a model or a tool sends into a run is bounded here, and every payload
the workflow schedules, returns or carries over continue-as-new is measured against
`PAYLOAD_BUDGET_BYTES` before it leaves. Temporal fails the *workflow task* (not the
call) for a payload over 2 MiB, and the task then fails again on every retry: a run that
builds one is wedged. Measuring first turns that into a repair message or a clear end.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from temporalio import workflow

__all__ = [
    "HANDLER_PREFIX_PATTERN",
    "MAX_CALLBACK_ERROR_CHARS",
    "MAX_CALLBACK_HASH_CHARS",
    "MAX_CALLBACK_RESULT_BYTES",
    "MAX_CALL_ID_CHARS",
    "MAX_CANCEL_REASON_CHARS",
    "MAX_DECIDER_CHARS",
    "MAX_GRANT_REF_CHARS",
    "MAX_HANDLER_PREFIX_CHARS",
    "MAX_INPUT_ANSWER_BYTES",
    "MAX_MESSAGE_CHARS",
    "MAX_PENDING_STEERS",
    "MAX_REASON_CHARS",
    "MAX_REFUSED_CALLS",
    "MAX_STEER_CHARS",
    "MAX_TOOL_ERROR_CHARS",
    "PAYLOAD_BUDGET_BYTES",
    "check_handler_prefix",
    "clip",
    "payload_bytes",
    "short_call_id",
]

MAX_HANDLER_PREFIX_CHARS = 64
"""Longest prefix an embedded loop's handler names may take (`AgentLoop.register_handlers`)."""
HANDLER_PREFIX_PATTERN = r"[A-Za-z0-9_.:/-]*"
"""What a handler prefix may hold: it becomes part of signal, update and query names, and
rides in OAuth records to the callback that signals the run."""

MAX_CALL_ID_CHARS = 256
"""Longest tool call id kept as the model sent it; a longer one is shortened (see
`short_call_id`). Providers' ids are about 30 characters."""

MAX_INPUT_ANSWER_BYTES = 64_000
"""Largest answer content to an MCP server's question (`answer_input`), encoded: a form
of a few fields, sent to the server and kept in history with the call's next activity."""

MAX_DECIDER_CHARS = 200
"""Longest decider name an approval decision may carry."""

MAX_REASON_CHARS = 2_000
"""Longest reason an approval decision or an authorization error may carry."""

MAX_CANCEL_REASON_CHARS = 500
"""A cancel reason is cut to this length (a cancel is never refused for its reason)."""

MAX_GRANT_REF_CHARS = 512
"""Longest opaque grant reference the OAuth callback may send."""

MAX_REFUSED_CALLS = 256
"""Most calls over `max_tool_calls_per_turn` one answer may hold and still be repaired
(each gets a timeline entry, an event and a tool message); a model asking for more is
broken, and the run ends `limit_reached` as it would with `on_invalid_call="fail"`."""

MAX_STEER_CHARS = 32_000
"""Longest steering instruction."""

MAX_MESSAGE_CHARS = 32_000
"""Longest user message a session takes (`send_message`), like a steering instruction: it
is recorded in history with its update and becomes one message of the conversation."""

MAX_PENDING_STEERS = 20
"""Steering instructions waiting for the next model turn; more are refused until it runs."""

MAX_CALLBACK_RESULT_BYTES = 1_000_000
"""Largest `callback_result` update (output or error and ids, as encoded): the update's
argument is recorded in history, and the formatted result is built from it."""

MAX_CALLBACK_ERROR_CHARS = 8_000
"""Longest error text a client may report for a callback call."""

MAX_TOOL_ERROR_CHARS = 8_000
"""Longest message a tool's failure carries (its message and the text the model reads,
each): a failure is recorded whole in history and logged by the worker, and one over
Temporal's failure limit is replaced by the server (losing its details) or refused by
gRPC (the attempt then times out and runs again). Longer messages are clipped."""

MAX_CALLBACK_HASH_CHARS = 64
"""Length of a callback request hash (hex sha256)."""

PAYLOAD_BUDGET_BYTES = 1_800_000
"""Largest payload the workflow builds: under Temporal's 2 MiB error limit with room for
the envelope (headers, metadata, a codec's overhead)."""


def payload_bytes(value: Any) -> int:
    """Size of `value` as the run's payload converter encodes it."""
    return workflow.payload_converter().to_payload(value).ByteSize()


def clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    note = f"... [{len(text) - limit} more characters cut]"
    return text[: max(limit - len(note), 0)] + note


def short_call_id(call_id: str) -> str:
    """A call id of at most `MAX_CALL_ID_CHARS`, unchanged when it already fits.

    A longer id is replaced by its start and a digest of the whole: stable for the same id
    (replay, reuse detection), distinct for different ids, and small in every record that
    repeats it (assistant message, tool message, timeline, events, activity input).
    """
    if len(call_id) <= MAX_CALL_ID_CHARS:
        return call_id
    digest = hashlib.sha256(call_id.encode("utf-8", "surrogatepass")).hexdigest()[:24]
    return f"{call_id[:32]}~{digest}"


def check_handler_prefix(prefix: object) -> str:
    """The prefix, if it can start handler names (and ride in records to the OAuth callback).

    Raises:
        ValueError: not text, longer than `MAX_HANDLER_PREFIX_CHARS`, or holding other
            characters than ASCII letters, digits and `_ . : / -`.
    """
    if not isinstance(prefix, str):
        raise ValueError(f"a handler prefix must be text, got {type(prefix).__name__}")
    if len(prefix) > MAX_HANDLER_PREFIX_CHARS:
        raise ValueError(
            f"a handler prefix holds at most {MAX_HANDLER_PREFIX_CHARS} characters, "
            f"got {len(prefix)}"
        )
    if not re.fullmatch(HANDLER_PREFIX_PATTERN, prefix):
        raise ValueError(
            f"a handler prefix holds only ASCII letters, digits and _ . : / -, got {prefix!r}"
        )
    return prefix
