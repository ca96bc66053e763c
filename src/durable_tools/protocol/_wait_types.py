"""Wire types of the waits a person answers in the workflow: a call pending approval and
the decision on it, a call pending the user's OAuth grant and the broker's word that it
was given, and a sub-agent's word to its parent of the approvals it waits for."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from durable_tools.protocol._limits import (
    MAX_CALL_ID_CHARS,
    MAX_DECIDER_CHARS,
    MAX_GRANT_REF_CHARS,
    MAX_REASON_CHARS,
)
from durable_tools.protocol._policy_types import GrantRequest

__all__ = [
    "MAX_RUN_ID_CHARS",
    "MAX_SUBAGENT_MORE",
    "MAX_SUBAGENT_WAITS",
    "MAX_SUBAGENT_WAIT_DECIDERS",
    "SUBAGENT_TOKEN_PATTERN",
    "SUBAGENT_WAITS_SIGNAL",
    "ApprovalDecision",
    "AuthorizationCompleted",
    "PendingApproval",
    "PendingAuthorization",
    "SubagentNotice",
    "SubagentWait",
]

MAX_SUBAGENT_WAITS = 20
"""Waits a sub-agent's notice lists (the rest are counted in `SubagentNotice.more`)."""
MAX_SUBAGENT_MORE = 100_000
"""Most waits a notice may count beyond those it lists (a tree of sub-agents waiting on
more is not a thing a person can work through; a bigger count is a forged one)."""
MAX_SUBAGENT_WAIT_DECIDERS = 50
"""Deciders a sub-agent's wait names (`SubagentWait.deciders`)."""
SUBAGENT_TOKEN_PATTERN = r"^[0-9a-f]{32}$"
"""A sub-agent call's notice token: `workflow.uuid4().hex` (`AgentInput.report_token`)."""
MAX_RUN_ID_CHARS = 1_000
"""Longest workflow id (Temporal's default limit)."""
SUBAGENT_WAITS_SIGNAL = "subagent_waits"
"""The parent's signal a sub-agent tells what it waits for (after the parent's handler
prefix, for a parent embedded in a host)."""


class PendingApproval(BaseModel):
    """A tool call waiting for a person."""

    call_id: str
    tool: str
    arguments: dict[str, Any]
    """Redacted per the tool's redaction rule."""
    tool_label: str | None = None
    """The tool's display label (`ToolSpec.label`), which people read instead of `tool`;
    None when it has none (use `display_tool`)."""
    arguments_hash: str
    """sha256 of the exact validated arguments: a decision names it to bind itself to them."""
    deciders: list[str] = Field(default_factory=list)
    """Who may decide; empty means anyone."""
    requested_at: datetime
    deadline: datetime | None = None
    escalated: bool = False
    approvals_required: int = 1
    """Distinct approvals needed (two-person rule)."""
    approved_by: list[str] = Field(default_factory=list)
    """Deciders who approved so far, while fewer than `approvals_required`."""
    summary: str | None = None
    """What the call does, in a line, from the tool's `approval_summary` (secret-marked
    arguments never in it; at most 300 characters); None when the tool gives none."""

    @property
    def display_tool(self) -> str:
        """What people read for the tool: its label, else its name."""
        return self.tool_label or self.tool


class ApprovalDecision(BaseModel):
    """A person's answer to a pending approval."""

    model_config = ConfigDict(extra="forbid")

    call_id: str = Field(max_length=MAX_CALL_ID_CHARS)
    approve: bool
    decider: str = Field(default="anonymous", max_length=MAX_DECIDER_CHARS)
    reason: str | None = Field(default=None, max_length=MAX_REASON_CHARS)
    arguments_hash: str | None = Field(default=None, max_length=64)
    """Must match the pending call's hash: approving exactly what was shown. Optional only
    while the call id was used once in the run; a reused id needs it."""
    grant: GrantRequest | None = None
    """With an approval: approve and stop asking (a standing grant for this tool)."""


class PendingAuthorization(BaseModel):
    """A tool call waiting for a person to complete an OAuth authorization."""

    call_id: str
    tool: str
    provider: str
    scopes: list[str] = Field(default_factory=list)
    authorization_url: str
    requested_at: datetime
    expires_at: datetime | None = None
    """When the link stops working (the OAuth state's lifetime); None if unknown."""
    deadline: datetime | None = None
    """When the wait ends by the run's `AuthorizationPolicy`; None waits for ever."""
    issued: int = 1
    """How many links were issued for this wait (re-issues count)."""


class AuthorizationCompleted(BaseModel):
    """Sent by the OAuth callback when a person finished (or refused) an authorization."""

    model_config = ConfigDict(extra="forbid")

    call_id: str = Field(max_length=MAX_CALL_ID_CHARS)
    grant_ref: str | None = Field(default=None, max_length=MAX_GRANT_REF_CHARS)
    """Opaque reference to the stored grant; never the token itself."""
    error: str | None = Field(default=None, max_length=MAX_REASON_CHARS)
    """Set when the person refused or the exchange failed."""


class SubagentWait(BaseModel):
    """An approval that a sub-agent run (or one of its own sub-agents) waits for, as its
    parent shows it: enough to say on which run, for what, and how to decide it."""

    model_config = ConfigDict(extra="forbid")

    run_id: str = Field(min_length=1, max_length=MAX_RUN_ID_CHARS)
    """The run that waits: the sub-agent, or a sub-agent of it."""
    call_id: str = Field(min_length=1, max_length=MAX_CALL_ID_CHARS)
    tool: str = Field(min_length=1, max_length=256)
    tool_label: str | None = Field(default=None, max_length=256)
    summary: str | None = Field(default=None, max_length=500)
    """The approval's one-line summary (`PendingApproval.summary`)."""
    arguments_hash: str = Field(pattern=r"^[0-9a-f]{64}$")
    """What a decision must name (`PendingApproval.arguments_hash`)."""
    requested_at: datetime
    deciders: list[Annotated[str, Field(min_length=1, max_length=MAX_DECIDER_CHARS)]] | None = (
        Field(default=None, max_length=MAX_SUBAGENT_WAIT_DECIDERS)
    )
    """Who may decide it (`PendingApproval.deciders`; empty: anyone), so the parent's lists
    show it only to them. None: not told (a sub-agent of the previous release, or a
    policy naming more than `MAX_SUBAGENT_WAIT_DECIDERS`): shown to nobody but those who
    ask for every wait."""

    @property
    def display_tool(self) -> str:
        """What people read for the tool: its label, else its name."""
        return self.tool_label or self.tool


class SubagentNotice(BaseModel):
    """What a sub-agent tells its parent each time the approvals it (and its own
    sub-agents) wait for change: all of them, so the newest notice is the whole truth and
    a lost or repeated one changes nothing once a newer one arrives.

    Ordered by (`sent_at`, `seq`): the child's workflow time, and its count of notices
    within its run (several in one workflow task share a time; a continued run starts
    its count again, later).
    """

    model_config = ConfigDict(extra="forbid")

    child_id: str = Field(min_length=1, max_length=MAX_RUN_ID_CHARS)
    """The sub-agent run's workflow id (the parent's record of the call names it)."""
    sent_at: datetime
    seq: int = Field(ge=0, le=2**31)
    waits: list[SubagentWait] = Field(default_factory=list, max_length=MAX_SUBAGENT_WAITS)
    more: int = Field(default=0, ge=0, le=MAX_SUBAGENT_MORE)
    """Waits beyond the `MAX_SUBAGENT_WAITS` listed."""
    token: str | None = Field(default=None, pattern=SUBAGENT_TOKEN_PATTERN)
    """The secret the parent gave the sub-agent call (`AgentInput.report_token`)."""
