"""A call that passed validation.

Every stage after validation (the gates, execution, recording) takes a `ValidCall`, so
none of them looks the tool up again, re-parses the arguments or masks them again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from durable_tools.messages import ToolCall
from durable_tools.tools import ToolSpec
from durable_tools.tools._spec import Transport

__all__ = ["ValidCall"]


@dataclass(frozen=True)
class ValidCall:
    """A call that passed validation: its tool and its parsed, schema-valid arguments."""

    call: ToolCall
    spec: ToolSpec
    arguments: dict[str, Any]
    redacted: dict[str, Any]
    """`arguments` as people see them (the tool's `redact` paths masked): in the timeline
    and in a pending approval."""
    transport: Transport
    """How the call travels, as its events say (the spec's catalog metadata, set by its
    source; a sub-agent's call is `sub-agent`)."""
    schema: str
    """`schema_digest` of the input schema the arguments were checked against: a person
    who approves the call approves it under this schema (`ToolInvocation.approved_schema`)."""
