"""Standing grants as pure functions: which calls a grant covers, the scope identity-scoped
grants are kept under, and the grant an approving decision asks for.

A grant binds the tool as its giver saw it (`ToolBinding`: the input schema's and the
safety metadata's digests) and covers a call only while the tool is still that; a grant
recorded before grants bound the tool (no digests) covers by name, as it did then.

A grant's constraints are never evaluated as code: each is a dotted path into the
arguments, one of a fixed set of comparisons and a JSON value, and a missing or mistyped
argument fails closed. Whether a covering grant may stand in for a person is `decide`'s
question (`grant_stands`), not this module's.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import MappingProxyType
from typing import Any
from urllib.parse import quote

from durable_tools.protocol._deciders import may_decide
from durable_tools.protocol._policy_types import Constraint, GrantRequest, StandingGrant
from durable_tools.tools._context import Identity
from durable_tools.tools._spec import ToolSpec
from durable_tools.tools._validation import safety_digest, schema_digest

__all__ = [
    "UNBOUND",
    "ToolBinding",
    "constraints_hold",
    "describe_constraints",
    "find_grant",
    "grant_covers",
    "identity_key",
    "make_grant",
]


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


@dataclass(frozen=True)
class ToolBinding:
    """A tool as a person saw it: the digests an approval or a grant binds."""

    schema: str | None
    """`schema_digest` of its input schema."""
    safety: str | None
    """`safety_digest` of what safety rules read of it."""

    @classmethod
    def of(cls, spec: ToolSpec) -> ToolBinding:
        """The binding of `spec` as it is now."""
        return cls(schema_digest(spec.input_schema), safety_digest(spec))


UNBOUND = ToolBinding(None, None)
"""No binding known (callers from before grants bound the tool): only grants recorded
without one cover calls then."""


def grant_covers(
    grant: StandingGrant,
    tool: str,
    arguments: dict[str, Any],
    now: datetime,
    binding: ToolBinding | None = UNBOUND,
) -> bool:
    """Whether `grant` allows this call now: same tool, bound to the same schema and safety
    metadata when it records them (a grant from before it did covers by name), not revoked
    or expired, constraints hold.

    `binding` is the called tool as it is now; None asks by name only (an operator's
    question to the store, never a call's: the workflow always passes the binding).
    """
    if grant.tool != tool or grant.revoked_at is not None:
        return False
    bound = (grant.tool_schema, grant.tool_safety)
    if binding is not None and bound != (None, None) and bound != (binding.schema, binding.safety):
        return False  # its arguments mean something else now, or it may do other things
    if grant.expires_at is not None and now >= grant.expires_at:
        return False
    return constraints_hold(grant.constraints, arguments)


def find_grant(
    grants: Iterable[StandingGrant],
    tool: str,
    arguments: dict[str, Any],
    now: datetime,
    makers: Sequence[str] = (),
    binding: ToolBinding | None = UNBOUND,
) -> StandingGrant | None:
    """The first grant covering the call (of the tool `binding` describes; None: by name
    only, see `grant_covers`) whose maker is among `makers` (empty: anyone)."""
    return next(
        (
            g
            for g in grants
            if grant_covers(g, tool, arguments, now, binding) and may_decide(g.granted_by, makers)
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
    binding: ToolBinding = UNBOUND,
) -> StandingGrant:
    """The standing grant an approving decision asked for, bound to the tool as the
    approver saw it (`binding`)."""
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
        tool_schema=binding.schema,
        tool_safety=binding.safety,
    )
