"""Wire types of callback tools: a published call, and a client's answer to it.

A callback tool has no worker body: the run publishes each call (`PendingCallback`, read
through the `pending_callbacks` query) and a client attached to the run answers it with
a `CallbackResult` (the `callback_result` update). Both cross the sandbox as data.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from durable_tools.protocol._limits import (
    MAX_CALL_ID_CHARS,
    MAX_CALLBACK_ERROR_CHARS,
    MAX_CALLBACK_HASH_CHARS,
)

__all__ = [
    "CALLBACK_ALREADY_ANSWERED",
    "CALLBACK_INVALID",
    "CALLBACK_OUTPUT_INVALID",
    "CALLBACK_UNKNOWN",
    "CallbackResult",
    "PendingCallback",
    "request_hash",
]

CALLBACK_ALREADY_ANSWERED = "CallbackAlreadyAnswered"
"""Rejection type: the call was answered (or ended) already; a client treats it as done."""
CALLBACK_UNKNOWN = "CallbackUnknown"
"""Rejection type: no call of that id was ever published by this run."""
CALLBACK_INVALID = "CallbackInvalid"
"""Rejection type: the answer is malformed, too large, or bound to another request."""
CALLBACK_OUTPUT_INVALID = "CallbackOutputInvalid"
"""Rejection type: the output breaks the tool's output schema; the call stays pending."""


def request_hash(idempotency_key: str, tool: str, arguments: dict[str, Any]) -> str:
    """sha256 binding an answer to exactly one published call.

    The idempotency key tells apart two calls that reuse one call id in different turns;
    the tool and its arguments tell apart anything else.
    """
    canonical = json.dumps(
        {"key": idempotency_key, "tool": tool, "arguments": arguments},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


class PendingCallback(BaseModel):
    """A callback call the run has published and waits on."""

    call_id: str
    """The model's id for the call: the answer names it."""
    tool: str
    """The callback tool's name: the client picks its handler by it."""
    arguments: dict[str, Any]
    """The validated arguments, as the handler gets them."""
    request_hash: str
    """Echoed back in the answer: binds it to this call (see `request_hash`)."""
    idempotency_key: str
    """Stable for this call across client restarts: a handler with side effects can use
    it to act once when it is asked twice."""
    published_at: datetime
    deadline: datetime
    """After this the call fails with a timeout the model sees."""
    client: bool = False
    """A tool the run's client declared (`AgentConfig.client_tools`): its front end runs
    it, and only it answers (the AG-UI endpoint answers no other callback call)."""


class CallbackResult(BaseModel):
    """A client's answer to one published callback call: an output or an error."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    call_id: str = Field(min_length=1, max_length=MAX_CALL_ID_CHARS)
    request_hash: str = Field(min_length=1, max_length=MAX_CALLBACK_HASH_CHARS)
    output: Any = None
    """The tool's result (any JSON value), checked against the tool's output schema."""
    error: str | None = Field(default=None, max_length=MAX_CALLBACK_ERROR_CHARS)
    """Set when the tool failed on the client: the model sees it as the tool's error."""
