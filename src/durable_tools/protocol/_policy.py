"""The layered approval policy as one pure function: which layer decides a call, and how.

`decide` asks, in order:

1. `skip_all_approvals_unsafe`: allow everything (tests, sandboxes);
2. `deny_tools`: deny;
3. the tool's and the run's own rules (`static_approval`, or a worker-side predicate whose
   answer the caller passes in): a call they do not send to a person is allowed;
4. `allow_safe_tools`: allow tools safe under any input;
5. `allow_tools`: allow by name;
6. standing grants (run-scoped, and identity-scoped ones the caller fetched from the
   worker's store), each within its argument constraints and before its expiry, and only
   where its maker could have given the approval under the policy in force for this call
   (`grant_stands`): one of the policy's deciders, and never for a call that needs more
   than one approval;
7. a person: `quorum` distinct approvals for money-spending or chosen tools, from the
   policy's deciders (auto mode, when on, races that person; see `_policy_auto`).

Nothing here does I/O, reads a clock or draws randomness: the workflow passes `now`.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import MappingProxyType
from typing import Any, Literal
from urllib.parse import quote

from durable_tools.protocol._deciders import may_decide
from durable_tools.protocol._policy_types import (
    Constraint,
    CriteriaSet,
    GrantRequest,
    StandingGrant,
)
from durable_tools.protocol._types import ApprovalPolicy
from durable_tools.tools._context import Identity
from durable_tools.tools._spec import ToolSpec

__all__ = [
    "SAFE_TAG",
    "Verdict",
    "constraints_hold",
    "criteria_for",
    "decide",
    "describe_constraints",
    "describe_policy",
    "find_grant",
    "grant_covers",
    "grant_makers",
    "grant_stands",
    "identity_key",
    "is_safe_tool",
    "make_grant",
    "quorum_for",
    "screen",
]

SAFE_TAG = "approval_safe"
"""A tool tagged so declares itself safe under any input (for `allow_safe_tools`)."""


@dataclass(frozen=True)
class Verdict:
    """What the policy decided for one call, and which layer decided it."""

    action: Literal["allow", "deny", "ask"]
    layer: str
    """`skip_all`, `deny_list`, `rules`, `safe_tool`, `allow_list`, `grant:<id>` or `person`."""
    detail: str = ""
    approvals_required: int = 1
    """For `ask`: distinct people who must approve (the two-person rule)."""
    deciders: tuple[str, ...] = ()
    """For `ask`: who may approve; empty means anyone who can reach the run."""
    set_aside: tuple[str, ...] = ()
    """Grants that covered the call but may not stand in for its approval, each with why."""


def decide(
    spec: ToolSpec,
    policy: ApprovalPolicy,
    arguments: dict[str, Any],
    *,
    rules_ask: bool,
    grants: Iterable[StandingGrant],
    now: datetime,
    legacy_grants: bool = False,
) -> Verdict:
    """Decide one validated call under the run's live policy.

    Args:
        spec: The tool called.
        policy: The run's live approval policy.
        arguments: The call's validated arguments.
        rules_ask: Whether the tool's and the run's own rules send the call to a person
            (`static_approval`, or the worker-side predicate's answer).
        grants: Standing grants that may cover the call: the run's own, and the one the
            identity store returned (if it was asked).
        now: The workflow's clock.
        legacy_grants: Replay only: a history recorded before grants were checked against
            the policy in force, where any covering grant allowed the call.

    Returns:
        The verdict and the layer that decided it.
    """
    screened = screen(spec, policy)
    if screened is not None:
        return screened
    if not rules_ask:
        return Verdict("allow", "rules", f"{spec.name} needs no approval under its rules")
    if policy.allow_safe_tools and is_safe_tool(spec):
        return Verdict("allow", "safe_tool", f"{spec.name} is safe under any input")
    if spec.name in policy.allow_tools:
        return Verdict("allow", "allow_list", f"{spec.name} is in the policy's allow_tools")
    set_aside: list[str] = []
    for grant in grants:
        if not grant_covers(grant, spec.name, arguments, now):
            continue
        why_not = None if legacy_grants else grant_stands(grant, spec, policy)
        if why_not is None:
            return Verdict(
                "allow", f"grant:{grant.grant_id}", f"standing grant by {grant.granted_by}"
            )
        set_aside.append(f"{grant.grant_id}: {why_not}")
    needed = quorum_for(spec, policy)
    return Verdict(
        "ask",
        "person",
        f"{needed} approval{'s' if needed > 1 else ''} from "
        + (", ".join(policy.deciders) or "anyone"),
        approvals_required=needed,
        deciders=tuple(policy.deciders),
        set_aside=tuple(set_aside),
    )


def screen(spec: ToolSpec, policy: ApprovalPolicy) -> Verdict | None:
    """The layers checked before the tool's own rules: the skip switch, then the deny list."""
    if policy.skip_all_approvals_unsafe:
        return Verdict("allow", "skip_all", "skip_all_approvals_unsafe is set")
    if spec.name in policy.deny_tools:
        return Verdict("deny", "deny_list", f"{spec.name} is in the policy's deny_tools")
    return None


def grant_makers(policy: ApprovalPolicy) -> tuple[str, ...]:
    """Who could have given an approval under `policy`: its deciders, and the people it
    escalates to (empty: anyone)."""
    if not policy.deciders:
        return ()
    escalated = policy.escalate_to if policy.on_timeout == "escalate" else ()
    return (*policy.deciders, *escalated)


def grant_stands(grant: StandingGrant, spec: ToolSpec, policy: ApprovalPolicy) -> str | None:
    """Why a grant covering a call may not stand in for its approval, or None if it may.

    A grant is one person's approval given in advance, so it stands only where that person
    could have approved the call under the policy in force now (which may be stricter than
    the one the grant was made under): never for a call that needs several approvals, and
    only from one of the policy's deciders.
    """
    needed = quorum_for(spec, policy)
    if needed > 1:
        return f"{spec.name} needs {needed} approvals; a grant is one person's"
    makers = grant_makers(policy)
    if makers and not may_decide(grant.granted_by, makers):
        return f"{grant.granted_by} is not among the policy's deciders"
    if grant.scope == "identity" and not policy.identity_grants:
        return "the policy does not use identity-scoped grants"
    return None


def is_safe_tool(spec: ToolSpec) -> bool:
    """Read-only and not networked, or explicitly tagged `approval_safe`."""
    return (spec.safety.read_only and not spec.safety.networked) or SAFE_TAG in spec.tags


def quorum_for(spec: ToolSpec, policy: ApprovalPolicy) -> int:
    """Distinct approvals a call of `spec` needs under `policy` (two-person rule)."""
    if policy.quorum > 1 and (spec.safety.spends_money or spec.name in policy.quorum_tools):
        return policy.quorum
    return 1


def criteria_for(policy: ApprovalPolicy, tool: str) -> CriteriaSet | None:
    """The auto-mode criteria set for `tool` (its own, else `*`), or None."""
    if policy.auto is None:
        return None
    return policy.auto.criteria.get(tool) or policy.auto.criteria.get("*")


def identity_key(agent: str, identity: Identity) -> str | None:
    """The scope identity-scoped grants are kept under: the agent and who its run acts for.

    None when the run acts for nobody in particular (no tenant and no user): such runs
    share nothing that could scope a grant, so they get none. Each part is
    percent-encoded, so no name can imitate another scope (`a/b` is not `a` + `b`).
    """
    if not identity.tenant and not identity.user:
        return None
    parts = {"agent": agent, "tenant": identity.tenant or "", "user": identity.user or ""}
    return ";".join(f"{name}={quote(value, safe='')}" for name, value in parts.items())


_MISSING = object()

_ORDER: Mapping[str, Callable[[Any, Any], bool]] = MappingProxyType(
    {
        "<": operator.lt,
        "<=": operator.le,
        ">=": operator.ge,
        ">": operator.gt,
    }
)


def _lookup(arguments: dict[str, Any], path: str) -> Any:
    value: Any = arguments
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return _MISSING
        value = value[part]
    return value


def _is_number(value: Any) -> bool:
    # bool is an int in Python: `True <= 10000` must not pass an amount bound.
    return isinstance(value, int | float) and not isinstance(value, bool)


def _same(value: Any, expected: Any) -> bool:
    """JSON equality: numbers by value (`1e2` is `100`), everything else by type and value,
    all the way down (Python's `[True] == [1]` is not JSON's)."""
    if _is_number(value) and _is_number(expected):
        return bool(value == expected)
    if type(value) is not type(expected):
        return False
    if isinstance(value, list | tuple):
        return len(value) == len(expected) and all(map(_same, value, expected))
    if isinstance(value, dict):
        return value.keys() == expected.keys() and all(
            _same(value[key], expected[key]) for key in value
        )
    return bool(value == expected)


def _holds(constraint: Constraint, arguments: dict[str, Any]) -> bool:
    value = _lookup(arguments, constraint.path)
    if value is _MISSING:
        return False  # a grant bounded by an argument never covers a call without it
    expected = constraint.value
    if constraint.op == "in":
        return isinstance(expected, list | tuple) and any(_same(value, item) for item in expected)
    if constraint.op in ("==", "!="):
        if type(value) is not type(expected) and not (_is_number(value) and _is_number(expected)):
            return False  # across types even `!=` holds nothing: a mistyped argument
        return _same(value, expected) == (constraint.op == "==")
    comparable = (_is_number(value) and _is_number(expected)) or (
        isinstance(value, str) and isinstance(expected, str)
    )
    if not comparable:
        # No order on lists, objects, bools or null: `[1, 999999] < [5]` is true in Python
        # and means nothing to a person.
        return False
    return bool(_ORDER[constraint.op](value, expected))


def constraints_hold(constraints: Sequence[Constraint], arguments: dict[str, Any]) -> bool:
    """Whether every constraint holds for `arguments` (fail closed on a missing or
    mistyped argument)."""
    return all(_holds(c, arguments) for c in constraints)


def describe_constraints(constraints: Sequence[Constraint]) -> str:
    """`amount_cents <= 10000 and currency in ['EUR']`, for events and the CLI."""
    return " and ".join(f"{c.path} {c.op} {c.value!r}" for c in constraints) or "any arguments"


def grant_covers(grant: StandingGrant, tool: str, arguments: dict[str, Any], now: datetime) -> bool:
    """Whether `grant` allows this call now: same tool, not revoked or expired, constraints hold."""
    if grant.tool != tool or grant.revoked_at is not None:
        return False
    if grant.expires_at is not None and now >= grant.expires_at:
        return False
    return constraints_hold(grant.constraints, arguments)


def find_grant(
    grants: Iterable[StandingGrant],
    tool: str,
    arguments: dict[str, Any],
    now: datetime,
    makers: Sequence[str] = (),
) -> StandingGrant | None:
    """The first grant covering the call whose maker is among `makers` (empty: anyone)."""
    return next(
        (
            g
            for g in grants
            if grant_covers(g, tool, arguments, now) and may_decide(g.granted_by, makers)
        ),
        None,
    )


def make_grant(
    request: GrantRequest,
    *,
    grant_id: str,
    tool: str,
    granted_by: str,
    now: datetime,
    scope_key: str,
    run_id: str,
    reason: str | None = None,
) -> StandingGrant:
    """The standing grant an approving decision asked for."""
    duration = request.duration_seconds
    expires = now + timedelta(seconds=duration) if duration else None
    return StandingGrant(
        grant_id=grant_id,
        tool=tool,
        scope=request.scope,
        identity=scope_key if request.scope == "identity" else "",
        constraints=request.constraints,
        granted_by=granted_by,
        granted_at=now,
        expires_at=expires,
        reason=reason,
        run_id=run_id,
    )


def describe_policy(policy: ApprovalPolicy) -> str:
    """The live policy in one line: its layers that differ from asking per tool."""
    parts = [f"require {policy.require}"]
    if policy.skip_all_approvals_unsafe:
        parts.insert(0, "SKIP ALL APPROVALS (unsafe)")
    if policy.deny_tools:
        parts.append("deny " + ", ".join(policy.deny_tools))
    if policy.allow_safe_tools:
        parts.append("safe tools allowed")
    if policy.allow_tools:
        parts.append("allow " + ", ".join(policy.allow_tools))
    if policy.identity_grants:
        parts.append("identity grants")
    if policy.auto is not None:
        parts.append(f"auto mode ({policy.auto.evaluator})")
    if policy.quorum > 1:
        tools = ", ".join(("tools that spend money", *policy.quorum_tools))
        parts.append(f"{policy.quorum} approvers for {tools}")
    if policy.deciders:
        parts.append("deciders " + ", ".join(policy.deciders))
    if policy.timeout_seconds is not None:
        parts.append(f"deadline {policy.timeout_seconds:g}s then {policy.on_timeout}")
    return "; ".join(parts)
