"""Wire types of the layered approval policy: constraints, standing grants, auto mode, batches.

Everything here is plain, frozen pydantic data with unknown keys refused: a silently
ignored field in a security policy is the worst kind of typo.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from durable_tools.workflows._limits import (
    MAX_CALL_ID_CHARS,
    MAX_DECIDER_CHARS,
    MAX_REASON_CHARS,
)

__all__ = [
    "EVALUATE_ACTIVITY",
    "GRANT_FIND_ACTIVITY",
    "GRANT_SAVE_ACTIVITY",
    "MAX_BATCH_DECISIONS",
    "MAX_CONSTRAINTS",
    "AutoApproval",
    "BatchDecision",
    "BatchItem",
    "Constraint",
    "CriteriaSet",
    "Evaluation",
    "EvaluationRequest",
    "GrantLookup",
    "GrantRequest",
    "GrantRevocation",
    "StandingGrant",
]

EVALUATE_ACTIVITY = "durable_tools.evaluate"
GRANT_FIND_ACTIVITY = "durable_tools.grants.find"
GRANT_SAVE_ACTIVITY = "durable_tools.grants.save"

MAX_CONSTRAINTS = 16
"""Argument constraints one grant may carry."""

MAX_BATCH_DECISIONS = 64
"""Calls one batch decision may decide."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Constraint(_Frozen):
    """One comparison on a call's arguments, e.g. `amount_cents <= 10000`. Never evaluated as
    code: `path` is a dotted key into the arguments, `op` one of a fixed set."""

    path: str = Field(min_length=1, max_length=200)
    """Dotted path into the arguments (`amount_cents`, `order.currency`)."""
    op: Literal["<", "<=", "==", "!=", ">=", ">", "in"]
    value: Any
    """Compared with the argument's value; for `in`, a list the value must belong to."""


class GrantRequest(_Frozen):
    """ "Approve and stop asking": sent with an approving decision to create a standing grant."""

    scope: Literal["run", "identity"] = "run"
    """run: the rest of this run; identity: every run of the same identity (needs
    `ApprovalPolicy.identity_grants`), until `duration_seconds` pass."""
    duration_seconds: float | None = Field(default=None, gt=0)
    """How long the grant holds; None: as long as its scope (required for `identity`)."""
    constraints: tuple[Constraint, ...] = Field(default=(), max_length=MAX_CONSTRAINTS)
    """The grant covers only calls whose arguments satisfy every constraint."""

    @model_validator(mode="after")
    def _identity_grants_expire(self) -> GrantRequest:
        # A grant that outlives the run must not outlive every review: it needs an end.
        if self.scope == "identity" and self.duration_seconds is None:
            raise ValueError("an identity-scoped grant needs duration_seconds")
        return self


class StandingGrant(_Frozen):
    """A standing permission to run a tool without asking, within its constraints."""

    grant_id: str
    tool: str
    scope: Literal["run", "identity"]
    identity: str = ""
    """For identity grants: `tenant/user` the grant belongs to."""
    constraints: tuple[Constraint, ...] = ()
    granted_by: str
    granted_at: datetime
    expires_at: datetime | None = None
    reason: str | None = None
    run_id: str = ""
    """The run whose decision created the grant."""
    revoked_at: datetime | None = None
    revoked_by: str | None = None


class GrantLookup(BaseModel):
    """Input of the grant-store `find` activity."""

    identity: str
    tool: str
    arguments: dict[str, Any]


class GrantRevocation(_Frozen):
    """Revoke a run-scoped standing grant (the `revoke_grant` update)."""

    grant_id: str = Field(min_length=1, max_length=100)
    revoked_by: str = Field(default="anonymous", max_length=MAX_DECIDER_CHARS)


class CriteriaSet(_Frozen):
    """What an auto-mode evaluator judges a tool's calls against."""

    approve_when: tuple[str, ...] = ()
    escalate_when: tuple[str, ...] = ()
    deny_when: tuple[str, ...] = ()
    min_confidence: float = Field(default=0.8, ge=0, le=1)
    """A verdict below this confidence goes to a person."""


class AutoApproval(_Frozen):
    """Auto mode: an evaluator judges calls before (and while) a person is asked."""

    evaluator: str = Field(min_length=1, max_length=500)
    """A Python evaluator registered on the worker by name (`build_worker(evaluators=...)`),
    or `model:<spec>` (e.g. `model:openai:gpt-4o-mini`) through the model adapters."""
    criteria: dict[str, CriteriaSet] = Field(default_factory=dict)
    """Criteria by tool name; `*` for every tool. A tool with none goes to a person."""
    timeout_seconds: float = Field(default=60.0, gt=0)
    """An evaluation slower than this goes to a person."""


class EvaluationRequest(BaseModel):
    """Input of the evaluator activity."""

    evaluator: str
    tool: str
    arguments: dict[str, Any]
    """Redacted per the tool's redaction rule."""
    criteria: CriteriaSet
    call_id: str = ""
    run_id: str = ""


class Evaluation(BaseModel):
    """An evaluator's verdict on one call."""

    verdict: Literal["approve", "escalate", "deny"]
    confidence: float = Field(ge=0, le=1)
    reasoning: str = ""
    latency_ms: float = 0.0


class BatchItem(_Frozen):
    """One call decided by a batch: bound to its own arguments hash."""

    call_id: str = Field(max_length=MAX_CALL_ID_CHARS)
    approve: bool
    arguments_hash: str = Field(min_length=64, max_length=64)


class BatchDecision(_Frozen):
    """Several pending calls decided at once by one person (the `decide_batch` update)."""

    items: tuple[BatchItem, ...] = Field(min_length=1, max_length=MAX_BATCH_DECISIONS)
    decider: str = Field(default="anonymous", max_length=MAX_DECIDER_CHARS)
    reason: str | None = Field(default=None, max_length=MAX_REASON_CHARS)
