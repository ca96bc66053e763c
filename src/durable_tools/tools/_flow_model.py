"""What a flow is, as data: the nodes a user writes, and the plan the flow workflow runs.

A node's arguments map each parameter of its tool to a value: a JSON literal, or a
reference to the flow's arguments (`$args.city`, `$args.trip.dates`) or to an earlier
node's output (`$nodes.geo.output`, `$nodes.geo.output.lat`). A literal string that
starts with `$args` or `$nodes` is written `{"$literal": "..."}`.

These types cross into the workflow (the plan rides in the flow tool's `ToolSpec.flow`,
recorded in history with the catalog), so they are plain data: no callables, no secrets.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from durable_tools._durations import Seconds
from durable_tools.tools._context import Identity
from durable_tools.tools._results import ToolOutcome
from durable_tools.tools._spec import ExecutionPolicy, ToolSpec

__all__ = [
    "CANCEL_GRACE_SECONDS",
    "FLOW_WORKFLOW",
    "LITERAL_KEY",
    "MAX_NODES",
    "NODE_ID",
    "FlowInput",
    "FlowNode",
    "FlowPlan",
    "FlowResult",
    "NodeReport",
    "PlannedNode",
    "Reference",
    "parse_reference",
]

FLOW_WORKFLOW = "FlowWorkflow"
"""The workflow type every flow runs as (one child workflow per flow call)."""

CANCEL_GRACE_SECONDS = 10.0
"""How long a failed or timed-out flow waits for its running nodes to acknowledge their
cancellation before it ends anyway (a tool that ignores it is left to its own timeout)."""

MAX_NODES = 64
"""Most nodes one flow may have: each is an activity (and a few events) in one history."""

NODE_ID = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
"""A node id: it appears in references (`$nodes.<id>.output`), so it has no dots."""

LITERAL_KEY = "$literal"
"""`{"$literal": value}` passes `value` as it is, even a string that looks like a reference."""

_FIELD = r"[A-Za-z0-9_-]+"
_REFERENCE = re.compile(
    rf"^\$(?:(?P<args>args)|nodes\.(?P<node>{_FIELD})\.output)(?P<path>(?:\.{_FIELD})*)$"
)


@dataclass(frozen=True)
class Reference:
    """Where a value comes from: the flow's arguments, or a node's output, and a field path."""

    node: str | None
    """The node whose output is read; None for the flow's arguments."""
    path: tuple[str, ...]
    """Object fields (or list indexes, as digits) to walk into, outermost first."""
    text: str
    """The reference as written."""

    def __str__(self) -> str:
        return self.text


def parse_reference(value: Any) -> Reference | None:
    """The reference `value` spells, or None when it is a literal.

    Raises:
        ValueError: a string starting with `$args` or `$nodes` that is not a well-formed
            reference (a typo must not become a literal that silently reaches a tool).
    """
    if not isinstance(value, str) or not value.startswith(("$args", "$nodes")):
        return None
    found = _REFERENCE.match(value)
    if found is None:
        raise ValueError(
            f"{value!r} is not a reference: write $args.NAME[.FIELD...] or "
            f'$nodes.NODE.output[.FIELD...] (or {{"{LITERAL_KEY}": ...}} for a literal string)'
        )
    path = tuple(p for p in found["path"].split(".") if p)
    if found["args"] is not None:
        return Reference(node=None, path=path, text=value)
    return Reference(node=found["node"], path=path, text=value)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class FlowNode(_Frozen):
    """One step of a flow: a call of a registered tool."""

    tool: str
    """The registered tool this node calls (its activity type in the UI)."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """Parameter name -> literal, `$args...` or `$nodes.<node>.output...` reference."""
    policy: ExecutionPolicy | None = None
    """Timeouts and retries for this node instead of the tool's own policy."""


class PlannedNode(_Frozen):
    """A validated node, as the flow workflow runs it."""

    id: str
    spec: ToolSpec
    """The node tool's spec, with the node's policy applied."""
    arguments: dict[str, Any]
    """The node's argument template (literals unwrapped only at run time)."""
    after: tuple[str, ...] = ()
    """Nodes that must complete first: those it reads, and explicit edges."""
    passes_output: bool = False
    """Another node or the flow's output reads a value out of this node's output, so
    the output must fit the flow's node budget instead of going to the artifact store."""


class FlowPlan(_Frozen):
    """A flow after validation: nodes in dependency order and the output the model sees."""

    name: str
    nodes: tuple[PlannedNode, ...]
    output: str | dict[str, str]
    """A reference (`$nodes.<id>.output[...]`), or names -> references (a JSON object)."""
    timeout_seconds: Seconds
    """The flow's overall bound: nodes still running then are cancelled, and it fails."""
    node_output_limit_bytes: int = Field(ge=256)
    """Largest node output passed on to other nodes; a larger one fails its node."""


class FlowInput(_Frozen):
    """Input of the flow workflow: the plan, the validated arguments and whose call it is."""

    plan: FlowPlan
    arguments: dict[str, Any]
    call_id: str = Field(max_length=512)
    """The model's call id of the flow tool."""
    idempotency_key: str = Field(max_length=2048)
    """The flow call's key; node `n` gets `<key>/<n>`, stable across retries and replays."""
    identity: Identity = Identity()
    output_limit_bytes: int = Field(default=16_000, ge=256)
    """The run's limit on what one call adds to the conversation."""
    activity_summaries: bool = True
    summary_arguments: bool = True


NodeStatus = Literal["completed", "failed", "cancelled", "not_started"]


class NodeReport(_Frozen):
    """How one node ended, for the flow's result and the parent's event log."""

    node: str
    tool: str
    status: NodeStatus
    attempts: int = 0
    detail: str | None = None
    """The first characters of its output or error."""


class FlowResult(_Frozen):
    """What the flow workflow returns: the one result the model sees, and node reports."""

    outcome: ToolOutcome
    nodes: tuple[NodeReport, ...] = ()
