"""The pure policy rules: constraints never evaluated as code, and fail closed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from durable_tools import ApprovalPolicy, GrantRequest, StandingGrant
from durable_tools.policy._grants import constraints_hold, grant_covers
from durable_tools.workflows import Constraint


def bound(op: str, value: object, path: str = "amount_cents") -> list[Constraint]:
    return [Constraint.model_validate({"path": path, "op": op, "value": value})]


@pytest.mark.parametrize(
    ("constraints", "arguments", "holds"),
    [
        (bound("<=", 10_000), {"amount_cents": 10_000}, True),
        (bound("<=", 10_000), {"amount_cents": 10_001}, False),
        (bound("<=", 10_000), {}, False),  # a missing argument never passes a bound
        (bound("<=", 10_000), {"amount_cents": "5"}, False),  # nor a mistyped one
        (bound("<=", 10_000), {"amount_cents": True}, False),  # bool is not a number here
        (bound("in", ["EUR", "USD"], "order.currency"), {"order": {"currency": "EUR"}}, True),
        (bound("in", ["EUR"], "order.currency"), {"order": {"currency": "GBP"}}, False),
        (bound("in", "EUR", "currency"), {"currency": "E"}, False),  # `in` needs a list
        (bound("<", {"a": 1}, "x"), {"x": {"a": 0}}, False),  # no ordering on dicts
    ],
)
def test_constraints(constraints: list[Constraint], arguments: dict, holds: bool) -> None:
    assert constraints_hold(constraints, arguments) is holds


def test_grants_expire_and_revoke() -> None:
    now = datetime(2025, 1, 1, tzinfo=UTC)
    grant = StandingGrant(
        grant_id="g",
        tool="refund",
        scope="run",
        granted_by="a",
        granted_at=now,
        expires_at=now + timedelta(seconds=60),
    )
    assert grant_covers(grant, "refund", {}, now)
    assert not grant_covers(grant, "pay", {}, now)
    assert not grant_covers(grant, "refund", {}, now + timedelta(seconds=60))
    revoked = grant.model_copy(update={"revoked_at": now})
    assert not grant_covers(revoked, "refund", {}, now)


def test_policy_refuses_typos_and_unsafe_combinations() -> None:
    with pytest.raises(ValidationError):
        ApprovalPolicy.model_validate({"allow_tool": ["refund"]})
    with pytest.raises(ValidationError):
        ApprovalPolicy(allow_tools=("x",), deny_tools=("x",))
    with pytest.raises(ValidationError):
        ApprovalPolicy(quorum=2, deciders=("alice",))
    with pytest.raises(ValidationError):
        GrantRequest(scope="identity")  # an identity grant needs an end
