"""The maps of a durable wait: the calls waiting for one kind of answer, and the answers.

A run pauses a tool call for four kinds of answer: a person's approval, an OAuth
authorization, a client's callback result, a user's answer to an MCP server's question.
Each kind is a `WaitKind` (how a run shows it, which events it emits, whether a steer
withdraws it) and each run holds one `Waits` per kind in its `GateState`
(`RunState.gates`); the primitive that opens, waits on and closes them is `gates/_wait`.
This module is data only, so that `_state` can hold the maps and `observe/` can show
them without importing the workflow code that changes them: only `workflows/gates/`
does (`bench.state_use` counts assignments made anywhere else).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from durable_tools.protocol._callback_types import CallbackResult, PendingCallback
from durable_tools.protocol._input_types import InputAnswer, PendingInput
from durable_tools.protocol._notification_types import NotificationEvent
from durable_tools.protocol._policy_types import StandingGrant
from durable_tools.protocol._types import ApprovalPolicy, RunStatus
from durable_tools.protocol._wait_types import (
    ApprovalDecision,
    AuthorizationCompleted,
    PendingApproval,
    PendingAuthorization,
    SubagentNotice,
)

__all__ = [
    "APPROVAL",
    "AUTHORIZATION",
    "CALLBACK",
    "INPUT",
    "GateState",
    "ParentReport",
    "Told",
    "WaitKind",
    "Waits",
]

Pending = TypeVar("Pending")
Answer = TypeVar("Answer")


@dataclass(frozen=True)
class WaitKind:
    """One kind of durable wait: what it shows and emits while a call waits."""

    name: str
    """What is awaited, in words: "approval", "authorization", ..."""
    status: RunStatus
    """The run's `AgentStatus` while a call waits (and no wait of a higher kind does)."""
    requested: NotificationEvent
    """The event (and notification) when a call starts waiting."""
    expired: NotificationEvent
    """The event (and notification) when the deadline passes first."""
    answered: NotificationEvent | None = None
    """The notification when the waiting call takes its answer (an approval's decision;
    the event is the decision handler's). None: the kinds that tell no one."""
    skippable: bool = False
    """A steer that skips the turn's remaining calls withdraws the wait."""
    always_shown: bool = True
    """False for the kinds runs did not show before `_wait.WAITS_SHOWN_PATCH`: a run
    recorded before it replays them unseen (no status, no notification, no default
    deadline), as it ran."""
    published_unshown: bool = False
    """An unshown wait still publishes on open and close (a callback did: it changed the
    UI's details), so that its replay upserts where the recorded run did."""


APPROVAL = WaitKind(
    "approval",
    RunStatus.AWAITING_APPROVAL,
    "approval.requested",
    "approval.expired",
    answered="approval.decided",
    skippable=True,
)
AUTHORIZATION = WaitKind(
    "authorization",
    RunStatus.AWAITING_AUTHORIZATION,
    "authorization.requested",
    "authorization.expired",
)
INPUT = WaitKind(
    "input", RunStatus.AWAITING_INPUT, "input.requested", "input.expired", always_shown=False
)
CALLBACK = WaitKind(
    "callback",
    RunStatus.AWAITING_CALLBACK,
    "callback.published",
    "callback.expired",
    always_shown=False,
    published_unshown=True,
)


class Waits(Generic[Pending, Answer]):
    """The calls of one kind waiting now, and the answers they have not taken yet.

    Never carried over continue-as-new: a run continues only between turns, when no call
    waits.
    """

    __slots__ = ("answered", "kind", "pending", "shown")

    def __init__(self, kind: WaitKind) -> None:
        self.kind = kind
        self.pending: dict[str, Pending] = {}
        """What each waiting call waits for, by call id (queries show it)."""
        self.answered: dict[str, Answer] = {}
        """Accepted answers, by call id, until the waiting call takes its own (approvals
        keep their decisions for the turn: a second decision is refused by them)."""
        self.shown = kind.always_shown
        """Whether this run shows waits of this kind (status, notifications)."""


Told = tuple[tuple[tuple[str, str, str], ...], int]
"""What a notice tells: (run id, call id, arguments hash) of each wait listed, and the
count of the rest."""


class ParentReport:
    """What a sub-agent last told its parent it waits for, and how many notices it sent
    (the next one's `seq`)."""

    __slots__ = ("sent", "told")

    def __init__(self, sent: int = 0) -> None:
        self.told: Told = ((), 0)
        self.sent = sent  # a continued run counts on from its chain's earlier runs

    def next_seq(self, told: Told) -> int | None:
        """The `seq` of a notice telling `told`, counted as sent; None when the last
        notice told the same (at first: nothing waits, nothing to tell)."""
        if told == self.told:
            return None
        self.told = told
        self.sent += 1
        return self.sent - 1


@dataclass
class GateState:
    """What the gates of one run hold: the live approval policy and the run's standing
    grants (both carried over continue-as-new), the calls waiting for each kind of answer
    and the answers they have not taken yet (never carried: a run continues only between
    turns, when no call waits). Changed only by `workflows/gates/`."""

    policy: ApprovalPolicy = field(default_factory=ApprovalPolicy)
    """The live approval policy: the config's, until a `set_policy` update changes it."""
    standing_grants: list[StandingGrant] = field(default_factory=list)
    """Run-scoped standing grants ("approve and stop asking"), revoked ones kept.
    Approval grants; a completed OAuth authorization is `authorizations.answered`."""

    approvals: Waits[PendingApproval, ApprovalDecision] = field(
        default_factory=lambda: Waits(APPROVAL)
    )
    """Calls waiting for a person's decision, and the decisions (kept for the turn)."""
    authorizations: Waits[PendingAuthorization, AuthorizationCompleted] = field(
        default_factory=lambda: Waits(AUTHORIZATION)
    )
    """Calls waiting for an OAuth authorization, and the completed authorizations not yet
    taken by their call (approval grants are another thing: `gates/_approval_gate`)."""
    reissue: set[str] = field(default_factory=set)
    """Call ids whose authorization link a person asked to re-issue."""
    inputs: Waits[PendingInput, InputAnswer] = field(default_factory=lambda: Waits(INPUT))
    """Calls waiting for the user to answer their MCP server's questions (`_input_gate`)."""
    callbacks: Waits[PendingCallback, CallbackResult] = field(
        default_factory=lambda: Waits(CALLBACK)
    )
    """Callback calls published and waiting for a client (see `_callback_gate`)."""

    subagents: dict[str, SubagentNotice | None] = field(default_factory=dict)
    """The run's sub-agent calls running now, by child workflow id, with the newest
    notice each sent of the approvals it waits for (None before its first). Never
    carried: a run continues only between turns, when no sub-agent call runs."""
    subagent_tokens: dict[str, str] = field(default_factory=dict)
    """The token each running sub-agent call gave its child (`AgentInput.report_token`),
    by child workflow id: only a notice carrying it is taken. A call started before the
    `subagent-notice-token` patch gave none and is not listed."""
    report: ParentReport = field(default_factory=ParentReport)
    """What this run (a sub-agent) last told its parent it waits for."""

    every: tuple[Waits[Any, Any], ...] = field(init=False, repr=False)
    """Every kind of wait, in the order the run's status and details show them."""

    def __post_init__(self) -> None:
        self.every = (self.approvals, self.authorizations, self.inputs, self.callbacks)
