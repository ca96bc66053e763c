"""An agent run's own input, carried state, result and views, as data that crosses the wire.

`AgentInput.revision` says what the starter knows of the workflow (see `INPUT_REVISION`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from durable_tools._wire import WireModel
from durable_tools.messages import Message, Usage
from durable_tools.protocol._callback_types import PendingCallback
from durable_tools.protocol._compaction import ContextView
from durable_tools.protocol._input_types import PendingInput
from durable_tools.protocol._policy_types import ApprovalPolicy, StandingGrant
from durable_tools.protocol._records import RunEvent, ToolCallRecord
from durable_tools.protocol._session_types import SessionCarried, SessionView
from durable_tools.protocol._types import AgentConfig, RunStatus
from durable_tools.protocol._wait_types import (
    SUBAGENT_TOKEN_PATTERN,
    PendingApproval,
    PendingAuthorization,
    SubagentWait,
)
from durable_tools.tools._catalog_pack import PackedCatalog
from durable_tools.tools._context import Identity
from durable_tools.tools._results import ArtifactRef
from durable_tools.tools._spec import ToolSpec

__all__ = [
    "INPUT_REVISION",
    "REVISION_LOCAL_CATALOG",
    "REVISION_SAFETY_NOTES",
    "REVISION_SHORT_START",
    "AgentInput",
    "AgentResult",
    "CarriedState",
    "ConversationView",
    "RunSnapshot",
]

REVISION_SHORT_START = 1
"""From this `AgentInput.revision`: no `packed-catalog` patch call, no first status upsert."""

REVISION_LOCAL_CATALOG = 2
"""From this `AgentInput.revision`: the catalog loads as a local activity (no round trip)."""

REVISION_SAFETY_NOTES = 3
"""From this `AgentInput.revision`: the model reads each tool's safety notes in its
description, with no patch asked (no marker, no `TemporalChangeVersion` upsert)."""

INPUT_REVISION = REVISION_SAFETY_NOTES
"""The `AgentInput.revision` runs started by `DurableTools.start` carry."""


class CarriedState(WireModel):
    """What a run carries over continue-as-new."""

    conversation: list[Message]
    """Messages from index `conversation_offset` of the whole conversation on."""
    notices_sent: int = Field(default=0, ge=0)
    """How many notices a sub-agent sent its parent before it continued: the next run's
    notices count on from there, so the parent, which keeps the newest by that count, takes
    them."""
    conversation_offset: int = 0
    """Messages before this index live only in the snapshot (dropped to keep the input small)."""
    snapshot: ArtifactRef | None = None
    """The model activity's latest conversation snapshot."""
    snapshot_length: int = 0
    turn: int
    tool_calls: int
    catalog: list[ToolSpec]
    catalog_packed: PackedCatalog | None = None
    """The catalog in compact form, when the run loaded it so (then `catalog` is empty)."""
    timeline: list[ToolCallRecord] = Field(default_factory=list)
    events: list[RunEvent] = Field(default_factory=list)
    events_total: int | None = None
    """Events the chain has emitted so far (None before it was counted: then `len(events)`)."""
    pending_steer: list[str] = Field(default_factory=list)
    discovered: list[str] = Field(default_factory=list)
    """Deferred tools found through tool search, advertised from then on."""
    call_uses: dict[str, int] = Field(default_factory=dict)
    """How often each call id was used, so reused ids keep getting distinct keys."""
    call_ids_dropped: bool = False
    """The chain used too many call ids to carry them: keys name the run of the chain."""
    budget_used: dict[str, int] = Field(default_factory=dict)
    """Calls made so far of each tool that has a `max_calls_per_run` budget."""
    continued: int = 0
    """How many times the run has continued-as-new."""
    policy: ApprovalPolicy | None = None
    """The live approval policy, when `set_policy` changed it."""
    standing_grants: list[StandingGrant] = Field(default_factory=list)
    """Run-scoped standing grants."""
    usage: Usage | None = None
    """Tokens used by the chain's model calls so far (None before usage was counted)."""
    fallback_usage: dict[str, Usage] = Field(default_factory=dict)
    """Of `usage`, the tokens of turns answered by fallback models, by model spec."""
    output_repairs: int = 0
    """Final answers that broke `output_type` so far (bounded by `output_retries`)."""
    session: SessionCarried | None = None
    """A session's count and idle deadline (None for a run that is no session)."""
    context: ContextView | None = None
    """What the model is sent of the conversation once it was compacted (None: all)."""
    context_tokens: int = 0
    """The model's context after the last model call, in tokens (see `_compaction`)."""
    compactions: int = 0
    """How often the chain compacted its model's context."""


class AgentInput(WireModel):
    """Input of an agent run."""

    prompt: str
    config: AgentConfig
    identity: Identity = Identity()
    granted_scopes: list[str] = Field(default_factory=list)
    carried: CarriedState | None = None
    """Set only by continue-as-new."""
    depth: int = Field(default=0, ge=0)
    """0 for a top-level run; a sub-agent's run is one deeper than its parent's."""
    max_depth: int | None = None
    """The root run's sub-agent depth limit, handed down to sub-agents."""
    report_to: str | None = Field(default=None, min_length=1, max_length=128)
    """For a sub-agent started by a sub-agent tool: the parent's signal (its handler prefix
    and `SUBAGENT_WAITS_SIGNAL`) the run tells what it waits for. None: it tells no one
    (top-level runs, runs started by `start_agent`, sub-agents of parents recorded before
    `SUBAGENT_WAITS_PATCH`)."""
    report_token: str | None = Field(default=None, pattern=SUBAGENT_TOKEN_PATTERN)
    """With `report_to`: the secret the parent gave this sub-agent call, which the run puts
    in every notice so the parent can tell its notices from forged ones. None: runs started
    before the `subagent-notice-token` patch (their parents take their notices without one)."""
    revision: int = Field(default=0, ge=0)
    """What the starter knows of the workflow; recorded in the start event, so every replay
    of the run decides the same. From 1 (`INPUT_REVISION`, set by `DurableTools.start`) the
    run loads the packed catalog without asking the `packed-catalog` patch (no marker, no
    `TemporalChangeVersion` upsert), and skips its first status upsert when its start
    attributes already hold those values. From 2 the catalog activity runs as a local
    activity: one marker instead of an activity's round trip and six events. From 3 the
    model reads the tools' safety notes without the `safety-notes-reach-the-model` patch
    (runs of revision 2 keep the descriptions they had). Sub-agents
    get their root run's revision. 0 (older clients, `temporal workflow start`, continued
    runs, whose catalog is carried): as every run did before."""


class AgentResult(BaseModel):
    """How a run ended."""

    status: RunStatus
    final_answer: str | None = None
    reason: str | None = None
    """Why the run ended, when it is not a plain completion."""
    turns: int = 0
    tool_calls: int = 0
    output: Any = None
    """With `AgentConfig.output_type`: the validated final answer, a JSON object (a dict);
    `AgentRun.result()` turns it into the type the caller gave. None otherwise."""


class RunSnapshot(BaseModel):
    """The `status` query: what a run is doing now."""

    status: RunStatus
    agent: str
    turn: int
    tool_calls: int
    final_answer: str | None = None
    reason: str | None = None
    pending_approvals: list[PendingApproval] = Field(default_factory=list)
    pending_authorizations: list[PendingAuthorization] = Field(default_factory=list)
    subagent_approvals: list[SubagentWait] = Field(default_factory=list)
    """Approvals the run's running sub-agents (and theirs) wait for, as they told it: the
    run waits on them. Decide them through this run (`AgentRun.decide_request` finds
    them) or the run named."""
    running_tools: list[str] = Field(default_factory=list)
    continued: int = 0
    conversation_offset: int = 0
    """Index of the first message the `conversation` query returns; earlier ones were
    carried over continue-as-new only as a snapshot in the artifact store."""
    policy: ApprovalPolicy | None = None
    """The live approval policy (the start's, or the last `set_policy`)."""
    standing_grants: list[StandingGrant] = Field(default_factory=list)
    """Run-scoped standing grants, revoked ones included."""
    usage: Usage = Field(default_factory=Usage)
    """Tokens used by the run's model calls, summed over turns and continue-as-new."""
    cost: float | None = None
    """What those tokens cost, when `AgentConfig.prices` prices the run's model."""
    pending_callbacks: list[PendingCallback] = Field(default_factory=list)
    """Callback calls waiting for a client to run them."""
    pending_inputs: list[PendingInput] = Field(default_factory=list)
    """Tool calls waiting for the user to answer their MCP server's questions."""
    session: SessionView | None = None
    """A session's messages and wait (None for a run that is no session)."""


class ConversationView(BaseModel):
    """The `conversation_view` query: the messages a run holds, and where the rest is.

    A continued run carries the conversation its snapshot holds by reference only:
    `messages` start at index `offset`, and the snapshot (`snapshot_length` messages)
    holds the earlier ones.
    """

    offset: int = 0
    snapshot: ArtifactRef | None = None
    snapshot_length: int = 0
    messages: list[Message] = Field(default_factory=list)
