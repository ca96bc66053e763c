"""Attacks on the pure approval rules: argument constraints and decider names.

Each test states the behaviour users rely on; those written for a break found by attacking
the policy failed before the fix that came with them.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from pydantic import ValidationError

from durable_tools.policy._grants import constraints_hold
from durable_tools.protocol._deciders import distinct_people, may_decide, name_key
from durable_tools.workflows import Constraint


def holds(path: str, op: str, value: Any, arguments: dict[str, Any]) -> bool:
    return constraints_hold([Constraint(path=path, op=op, value=value)], arguments)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("op", "bound", "argument"),
    [
        ("==", [1], [True]),  # a list of flags is not a list of numbers
        ("==", {"notify": 0}, {"notify": False}),
        ("in", [[1, 2]], [True, 2]),
        ("in", [{"level": 1}], {"level": True}),
        ("==", [None], [0]),
    ],
)
def test_a_bool_inside_a_container_never_equals_a_number(
    op: str, bound: Any, argument: Any
) -> None:
    # Broke: Python's `[True] == [1]` let a grant for `flags == [1]` cover `[True]`.
    assert not holds("flags", op, bound, {"flags": argument})


def test_numbers_inside_containers_compare_by_value_as_at_the_top() -> None:
    assert holds("limits", "==", [100, {"max": 5}], {"limits": [1e2, {"max": 5.0}]})
    assert holds("amount", "==", 100, {"amount": 1e2})
    assert holds("amount", ">=", 0, {"amount": -0.0})
    assert not holds("limits", "==", [100], {"limits": [100, 1]})
    assert not holds("limits", "==", {"max": 5}, {"limits": {"max": 5, "extra": 1}})


@pytest.mark.parametrize(
    ("bound", "argument"),
    [
        ([5], [1, 999_999]),  # lists order element by element: `[1, 999999] < [5]`
        ({"a": 1}, {"a": 0}),  # no order on objects
        (None, None),
    ],
)
def test_an_order_bound_holds_only_for_numbers_and_strings(bound: Any, argument: Any) -> None:
    # Broke for lists: a grant for `amounts < [5]` covered `[1, 999999]`.
    assert not holds("amounts", "<", bound, {"amounts": argument})
    assert not holds("amounts", "<=", bound, {"amounts": argument})


def test_arguments_that_cannot_satisfy_a_bound_fail_closed() -> None:
    assert not holds("amount", "<=", 10_000, {"amount": 10**400 + 1})
    assert not holds("amount", "<=", 10_000, {"amount": math.nan})
    assert not holds("amount", "<=", 10_000, {"amount": math.inf})
    assert not holds("amount", "<=", 10_000, {"amount": True})
    assert not holds("amount", "<=", 10_000, {"amount": "5"})
    assert not holds("order.amount", "<=", 10_000, {"order.amount": 5})  # a dotted key is a path
    assert not holds("order.amount", "<=", 10_000, {"order": [5]})
    assert not holds("currency", "in", "EURO", {"currency": "EUR"})  # `in` needs a list
    assert holds("order.amount", "<=", 10_000, {"order": {"amount": 5}})


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, [1, math.nan], {"a": math.inf}])
def test_a_constraint_on_a_non_finite_number_is_refused(value: Any) -> None:
    # A bound of inf covers every amount, and NaN answers `!=` with yes; JSON has neither,
    # so a grant saved and read back would mean something else (null).
    with pytest.raises(ValidationError, match="finite"):
        Constraint(path="amount", op="<=", value=value)


@pytest.mark.parametrize(
    "alias",
    [
        "alice\u200b",  # zero-width space
        "al\u00adice",  # soft hyphen
        "\u2060alice",  # word joiner
        "ali\u200dce",  # zero-width joiner
        "alice\ufeff",  # byte order mark
        "\u202ealice",  # right-to-left override
        "alice\u0000",
        "alice\u00a0",
        "a\u200blice via group:ops",
    ],
)
def test_invisible_characters_make_no_other_person(alias: str) -> None:
    # Broke: `alice` and `alice` + U+200B looked alike in the audit and counted as two.
    assert name_key(alias).split(" via ")[0] == "alice"
    assert distinct_people(["alice", alias]) == {"alice"}
    assert may_decide(alias, ["alice"])


def test_a_group_is_never_a_person() -> None:
    # `group:ops` names a group; only a member deciding through it (`bob via group:ops`)
    # may approve, and a person part that claims to be a group decides nothing.
    assert not may_decide("group:ops", ["group:ops"])
    assert not may_decide("GROUP:OPS", ["alice", "group:ops"])
    assert not may_decide("group:ops via group:ops", ["group:ops"])
    assert not may_decide("group:ops", [])
    assert may_decide("bob via group:ops", ["group:ops"])
    assert may_decide("bob via GROUP:Ops", ["group:ops"])


def test_names_that_differ_stay_apart() -> None:
    assert distinct_people(["ilker", "\u0130lker"]) == {"ilker", "i\u0307lker"}
    assert distinct_people(["strasse", "STRAßE"]) == {"strasse"}
    assert distinct_people(["\u0430lice", "alice"]) == {"\u0430lice", "alice"}
    assert not may_decide("", ["alice"])
    assert not may_decide("alice via bob", ["bob"])
