"""A call that passed validation.

Every stage after validation (the gates, execution, recording) takes a `ValidCall`, so
none of them looks the tool up again or re-parses the arguments.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from durable_tools.messages import ToolCall
from durable_tools.tools import ToolSpec

__all__ = ["ValidCall"]


@dataclass(frozen=True)
class ValidCall:
    """A call that passed validation: its tool and its parsed, schema-valid arguments."""

    call: ToolCall
    spec: ToolSpec
    arguments: dict[str, Any]
