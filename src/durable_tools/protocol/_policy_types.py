"""Wire types of the layered approval policy: the policy, constraints, standing grants,
auto mode, batches.

Everything here is plain, frozen pydantic data with unknown keys refused: a silently
ignored field in a security policy is the worst kind of typo.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StringConstraints, model_validator

from durable_tools._durations import Seconds
from durable_tools.protocol._deciders import name_key
from durable_tools.protocol._limits import (
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
    "MAX_SAFETY_RULES",
    "ApprovalPolicy",
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
    "PolicyChange",
    "SafetyRule",
    "StandingGrant",
    "plain_absolute_path",
]

EVALUATE_ACTIVITY = "durable_tools.evaluate"
GRANT_FIND_ACTIVITY = "durable_tools.grants.find"
GRANT_SAVE_ACTIVITY = "durable_tools.grants.save"

MAX_CONSTRAINTS = 16
"""Argument constraints one grant may carry."""

_MAX_VALUE_DEPTH = 32
"""Nesting a constraint value may have (arguments are bounded the same way)."""

MAX_BATCH_DECISIONS = 64
"""Calls one batch decision may decide."""

MAX_SAFETY_RULES = 32
"""Safety rules one policy may carry."""

_RootPath = Annotated[str, StringConstraints(min_length=1, max_length=1_000)]
_Label = Annotated[str, StringConstraints(min_length=1, max_length=100)]


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

    @model_validator(mode="after")
    def _value_is_plain_json(self) -> Constraint:
        # inf as a bound covers every amount and NaN answers `!=` with yes; JSON has
        # neither, so a grant written to the store and read back would mean null instead.
        stack: list[tuple[Any, int]] = [(self.value, 1)]
        while stack:
            node, depth = stack.pop()
            if depth > _MAX_VALUE_DEPTH:
                raise ValueError(f"a constraint value nests deeper than {_MAX_VALUE_DEPTH}")
            if isinstance(node, float) and not math.isfinite(node):
                raise ValueError("a constraint value must be a finite number, not NaN or inf")
            children = node.values() if isinstance(node, dict) else node
            if isinstance(node, dict | list | tuple):
                stack.extend((child, depth + 1) for child in children)
        return self


class GrantRequest(_Frozen):
    """ "Approve and stop asking": sent with an approving decision to create a standing grant."""

    scope: Literal["run", "identity"] = "run"
    """run: the rest of this run; identity: every run of the same identity (needs
    `ApprovalPolicy.identity_grants`), until `duration_seconds` pass."""
    duration_seconds: Seconds | None = None
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
    tool_schema: str | None = Field(default=None, max_length=64)
    """`schema_digest` of the tool's input schema when the grant was given: the grant
    covers a call only while the tool has that schema. None: a grant recorded before
    grants bound the tool, which keeps its name-only meaning."""
    tool_safety: str | None = Field(default=None, max_length=64)
    """`safety_digest` of the tool when the grant was given (what safety rules read:
    shell, filesystem, network, money, workspace, side effects, tags): the grant covers
    a call only while the tool is still that. None: as `tool_schema`."""


class GrantLookup(BaseModel):
    """Input of the grant-store `find` activity."""

    identity: str
    """The run's grant scope (`identity_key`)."""
    tool: str
    arguments: dict[str, Any]
    makers: tuple[str, ...] = ()
    """Only grants made by one of these may stand (the policy's deciders); empty: anyone."""
    tool_schema: str | None = None
    tool_safety: str | None = None
    """The called tool's `schema_digest` and `safety_digest`: a grant bound to another
    schema or safety metadata does not cover the call (None: the lookup of a run from
    before grants bound the tool, which such grants never cover)."""


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
    timeout_seconds: Seconds = 60.0
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


class SafetyRule(_Frozen):
    """A policy rule over what tools may do (their `Safety`), not over their names.

    The rule matches a tool when ANY condition it names holds: "confirm anything that runs
    a shell, writes files outside the workspace root, or has irreversible side effects" is

    ```python
    SafetyRule(shell=True, writes_outside_workspace=True, side_effects=("irreversible",))
    ```

    A flag set to False is no condition (it never matches "tools that do not"); a rule
    naming no condition is refused, as a rule that can match nothing is a typo. Flags
    accept only true and false: `"no"` in a policy file is an error, not a yes.
    """

    action: Literal["ask", "deny"] = "ask"
    """ask: a person approves each matching call (as the tool's own `approval=True` would);
    deny: matching calls are denied without asking, like `deny_tools`."""
    shell: StrictBool = False
    """Tools that run shell commands (`Safety.shell`)."""
    filesystem: StrictBool = False
    """Tools that read or write files at all (`Safety.filesystem`)."""
    writes_outside_workspace: StrictBool = False
    """Tools that may write files (`filesystem` and not `read_only`) outside the workspace:
    those with no `workspace_root`, and, when `workspace_roots` are given, those whose root
    is not one of them or inside one."""
    workspace_roots: tuple[_RootPath, ...] = Field(default=(), max_length=64)
    """Absolute, normalised directories that count as the workspace for
    `writes_outside_workspace` (empty: the root each tool is confined to counts)."""
    networked: StrictBool = False
    """Tools that talk to other hosts (`Safety.networked`)."""
    spends_money: StrictBool = False
    """Tools that can cost money (`Safety.spends_money`)."""
    mutating: StrictBool = False
    """Tools that are not read-only."""
    side_effects: tuple[Literal["none", "internal", "external", "irreversible"], ...] = Field(
        default=(), max_length=4
    )
    """Tools whose `side_effect` is one of these (a tool that declares none is `external`)."""
    tags: tuple[_Label, ...] = Field(default=(), max_length=64)
    """Tools carrying any of these tags (compared with case, width and invisible characters
    folded, so a rule matches more spellings, never fewer)."""

    @model_validator(mode="after")
    def _names_a_condition(self) -> SafetyRule:
        if not (
            self.shell
            or self.filesystem
            or self.writes_outside_workspace
            or self.networked
            or self.spends_money
            or self.mutating
            or self.side_effects
            or self.tags
        ):
            raise ValueError(
                "a safety rule needs at least one condition (shell, filesystem, "
                "writes_outside_workspace, networked, spends_money, mutating, side_effects "
                "or tags set): as written it matches no tool"
            )
        if self.workspace_roots and not self.writes_outside_workspace:
            raise ValueError("workspace_roots is read only with writes_outside_workspace = true")
        for root in self.workspace_roots:
            if not plain_absolute_path(root):
                raise ValueError(
                    f"workspace root {root!r} must be an absolute, normalised path "
                    "(starting with /, no '.', '..', empty parts or trailing /)"
                )
        return self


def plain_absolute_path(path: str) -> bool:
    """Whether `path` has the one plain spelling of an absolute path: `/srv/ws` yes; `srv`,
    `/srv/../etc`, `/srv//ws`, `/srv/ws/`, `/srv/./ws` and control characters no (a root
    compared as text must have one spelling)."""
    if path == "/":
        return True
    if not path.startswith("/") or any(ord(c) < 32 or ord(c) == 127 for c in path):
        return False
    return all(part not in ("", ".", "..") for part in path[1:].split("/"))


class ApprovalPolicy(BaseModel):
    """Run-level rules for human approval, on top of what each tool declares."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    require: Literal["tool", "mutating", "all", "none"] = "tool"
    """tool: as tools declare (approval, or requires_confirmation); mutating: also every
    tool that is not read-only; all: every call; none: never ask (tools' own rules ignored)."""
    deciders: tuple[str, ...] = ()
    """Who may decide; empty means anyone who can reach the run."""
    timeout_seconds: Seconds | None = None
    """How long an approval may wait; None waits for ever (durably)."""
    on_timeout: Literal["deny", "escalate", "fail"] = "deny"
    """What the deadline passing does."""
    escalate_to: tuple[str, ...] = ()
    """Deciders after an escalation."""
    escalation_timeout_seconds: Seconds | None = None
    """Second deadline, after which the call is denied. None: same as `timeout_seconds`."""
    on_deny: Literal["tell_model", "end_run"] = "tell_model"
    """A denial goes back to the model as an error message, or ends the run."""

    # Layers, checked in this order for a call the rules above would send to a person
    # (see `durable_tools.policy.decide`). Every default keeps the rules above as they
    # were: a person is asked.
    skip_all_approvals_unsafe: bool = False
    """Never ask anyone, whatever tools and the rules above say. For tests and sandboxes
    only: the name is meant to be seen in a review."""
    allow_safe_tools: bool = False
    """Allow without asking the calls of tools safe under any input: read-only and not
    networked, or tagged `approval_safe`."""
    allow_tools: tuple[str, ...] = ()
    """Tools allowed without asking."""
    deny_tools: tuple[str, ...] = ()
    """Tools denied without asking (checked before every allowing layer but the skip)."""
    identity_grants: bool = False
    """Look up (and let deciders create) standing grants scoped to the run's identity, kept
    in the worker's grant store across runs."""
    auto: AutoApproval | None = None
    """Auto mode: an evaluator judges calls against criteria; it never fails open."""
    quorum: int = Field(default=1, ge=1, le=10)
    """Two-person rule: distinct approvals a call of a `quorum_tools` or `spends_money` tool
    needs (any denial denies). 1 keeps one approval for every tool."""
    quorum_tools: tuple[str, ...] = ()
    """Tools that need `quorum` approvals besides those marked `spends_money`."""
    safety_rules: tuple[SafetyRule, ...] = Field(default=(), max_length=MAX_SAFETY_RULES)
    """Rules over what tools may do (their safety metadata): a `deny` rule a tool matches
    denies its calls (checked with `deny_tools`), an `ask` rule sends them to a person
    whatever `require` and the tool's own rules say; the allowing layers after the rules
    (safe tools, `allow_tools`, grants) still apply."""

    @model_validator(mode="after")
    def _escalation_names_deciders(self) -> ApprovalPolicy:
        # An escalation with nobody to escalate to would leave the deciders empty, and an
        # empty list means "anyone": a deadline must never widen who may approve.
        if self.on_timeout == "escalate" and not self.escalate_to:
            raise ValueError(
                "on_timeout='escalate' needs escalate_to: the deciders after the deadline "
                "(an empty list would let anyone approve)"
            )
        if self.on_timeout == "escalate" and self.timeout_seconds is None:
            raise ValueError("on_timeout='escalate' needs timeout_seconds: when to escalate")
        for field, names in (("deciders", self.deciders), ("escalate_to", self.escalate_to)):
            # One person counts once however the name is written (`alice`, `ALICE`): a
            # quorum the named deciders cannot reach would deny every such call.
            distinct = len({name_key(name) for name in names})
            if self.quorum > 1 and names and distinct < self.quorum:
                raise ValueError(
                    f"quorum {self.quorum} needs at least {self.quorum} distinct {field} "
                    f"({distinct} named: {', '.join(names)})"
                )
        both = sorted(set(self.allow_tools) & set(self.deny_tools))
        if both:
            raise ValueError(f"tools both allowed and denied: {', '.join(both)}")
        return self


class PolicyChange(BaseModel):
    """A new live approval policy for a run (the `set_policy` update)."""

    model_config = ConfigDict(extra="forbid")

    policy: ApprovalPolicy
    changed_by: str = Field(default="anonymous", max_length=MAX_DECIDER_CHARS)
    reason: str | None = Field(default=None, max_length=MAX_REASON_CHARS)
