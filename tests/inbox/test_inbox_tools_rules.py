"""The tools page's pure parts: the approval rule in force is `decide`'s verdict in words
(deny and ask safety rules, a worker-side predicate, the two-person rule, a skip-all
policy), a tool's kind comes from its transport (never from a name a server chose), and
hostile paging parameters are read as the defaults, within the page bound."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from durable_tools import ApprovalPolicy
from durable_tools.inbox._tools import (
    DEFAULT_PAGE_SIZE,
    MAX_PAGE_SIZE,
    approval_rule,
    page_bounds,
    source_kind,
)
from durable_tools.tools._spec import Safety, ToolSpec
from durable_tools.workflows import SafetyRule

NOW = datetime(2026, 1, 1, tzinfo=UTC)
SHELL = ToolSpec(name="sh", safety=Safety(shell=True))
PLAIN = ToolSpec(name="plain", safety=Safety(read_only=True))


def test_a_deny_rule_denies_and_an_ask_rule_asks() -> None:
    deny = ApprovalPolicy(safety_rules=(SafetyRule(shell=True, action="deny"),))
    denied = approval_rule(SHELL, deny, NOW)
    assert (denied.action, denied.words, denied.layer) == ("deny", "denied", "safety_rule")
    assert "runs shell commands" in denied.why
    asked = approval_rule(SHELL, ApprovalPolicy(safety_rules=(SafetyRule(shell=True),)), NOW)
    assert (asked.action, asked.words) == ("ask", "asks for approval")
    assert approval_rule(PLAIN, deny, NOW).words == "allowed without approval"
    assert approval_rule(SHELL, None, NOW).words == "allowed without approval"  # its rules


def test_a_predicate_a_quorum_and_skip_all_are_said_as_they_are() -> None:
    conditional = ToolSpec(name="maybe", approval="conditional")
    rule = approval_rule(conditional, ApprovalPolicy(), NOW)
    assert (rule.action, rule.words) == ("per call", "asks when its predicate says so")
    money = ToolSpec(name="pay", approval="always", safety=Safety(spends_money=True))
    two = approval_rule(money, ApprovalPolicy(quorum=2, deciders=("alice", "bob")), NOW)
    assert two.words == "asks for 2 approvals" and two.deciders == ("alice", "bob")
    skipped = approval_rule(money, ApprovalPolicy(skip_all_approvals_unsafe=True), NOW)
    assert skipped.action == "allow" and "skip_all_approvals_unsafe" in skipped.why


def test_the_kind_comes_from_the_transport() -> None:
    assert source_kind(ToolSpec(name="a", source="openapi:api.example.com", transport="http")) == (
        "openapi"
    )
    assert source_kind(ToolSpec(name="b", source="http:openapi.example.com", transport="http")) == (
        "http"
    )
    assert source_kind(ToolSpec(name="c", source="mcp:evil", transport="function")) == "python"
    assert source_kind(ToolSpec(name="d", transport="mcp")) == "mcp"
    assert source_kind(ToolSpec(name="e", transport="a2a")) == "a2a"


@pytest.mark.parametrize(
    ("offset", "limit", "expected"),
    [
        (None, None, (0, DEFAULT_PAGE_SIZE)),
        ("-1", "-5", (0, DEFAULT_PAGE_SIZE)),
        ("1e9", "0", (0, 1)),
        ("\u0661\u0660", "\u0665", (0, DEFAULT_PAGE_SIZE)),  # Arabic-Indic digits
        ("99999999999999999999", "99999999", (0, MAX_PAGE_SIZE)),
        ("20", "50", (20, 50)),
        (" 5", "5 ", (0, DEFAULT_PAGE_SIZE)),
    ],
)
def test_paging_parameters_are_plain_numbers_within_bounds(
    offset: str | None, limit: str | None, expected: tuple[int, int]
) -> None:
    assert page_bounds(offset, limit) == expected
