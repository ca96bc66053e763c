"""`decide`, the one policy entry: what it settles from the call alone, what it consults,
and what a changed policy may do to a call already waiting for a person."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from durable_tools import (
    ApprovalPolicy,
    AutoApproval,
    PendingApproval,
    Safety,
    StandingGrant,
    ToolSpec,
)
from durable_tools.policy._decide import arguments_hash, decide
from durable_tools.workflows import CriteriaSet

NOW = datetime(2026, 1, 1, tzinfo=UTC)
REFUND = ToolSpec(name="refund", approval="always")
PAY = ToolSpec(name="pay", approval="always", safety=Safety(spends_money=True))
TIP = ToolSpec(name="tip", approval="conditional")
LOOKUP = ToolSpec(name="lookup", safety=Safety(read_only=True))


def waiting(tool: str, deciders: list[str], **fields: object) -> PendingApproval:
    return PendingApproval.model_validate(
        {
            "call_id": "c",
            "tool": tool,
            "arguments": {},
            "arguments_hash": "0" * 64,
            "deciders": deciders,
            "requested_at": NOW,
            **fields,
        }
    )


@pytest.mark.parametrize(
    ("spec", "policy", "action", "layer"),
    [
        (REFUND, ApprovalPolicy(skip_all_approvals_unsafe=True), "allow", "skip_all"),
        (REFUND, ApprovalPolicy(deny_tools=("refund",)), "deny", "deny_list"),
        (LOOKUP, ApprovalPolicy(), "allow", "rules"),
        (REFUND, ApprovalPolicy(allow_tools=("refund",)), "allow", "allow_list"),
        (REFUND, ApprovalPolicy(), "consult", "grants"),
        (TIP, ApprovalPolicy(), "consult", "rules"),
        (TIP, ApprovalPolicy(require="all"), "consult", "grants"),
        (LOOKUP, ApprovalPolicy(require="none", deny_tools=("lookup",)), "deny", "deny_list"),
    ],
)
def test_the_call_alone_settles_what_it_can_and_names_what_it_needs(
    spec: ToolSpec, policy: ApprovalPolicy, action: str, layer: str
) -> None:
    # The gate schedules the preflight only from this verdict: a denied call none at all.
    verdict = decide(spec, policy, {}, now=NOW)
    assert (verdict.action, verdict.layer) == (action, layer)


def test_a_predicate_is_consulted_and_its_answer_decides() -> None:
    first = decide(TIP, ApprovalPolicy(), {}, now=NOW)
    assert (first.needs, first.rules_ask) == ("predicate", None)
    assert decide(TIP, ApprovalPolicy(), {}, now=NOW, rules_ask=False, grants=[]).layer == "rules"
    asked = decide(TIP, ApprovalPolicy(), {}, now=NOW, rules_ask=True, grants=[])
    assert (asked.action, asked.layer) == ("ask", "person")


def test_the_verdict_for_a_person_names_who_and_auto_modes_criteria() -> None:
    criteria = CriteriaSet(approve_when=("small",))
    policy = ApprovalPolicy(
        deciders=("alice", "bob"),
        quorum=2,
        timeout_seconds=60,
        on_timeout="escalate",
        escalate_to=("carol", "dave"),
        auto=AutoApproval(evaluator="e", criteria={"*": criteria}),
    )
    refund = decide(REFUND, policy, {}, now=NOW, grants=[])
    assert refund.deciders == ("alice", "bob")
    assert refund.grant_makers == ("alice", "bob", "carol", "dave")
    assert (refund.approvals_required, refund.criteria) == (1, criteria)
    assert decide(PAY, policy, {}, now=NOW, grants=[]).approvals_required == 2
    assert decide(REFUND, ApprovalPolicy(), {}, now=NOW, grants=[]).criteria is None


def test_a_grant_stands_only_once_grants_are_given() -> None:
    grant = StandingGrant(
        grant_id="g", tool="refund", scope="run", granted_by="alice", granted_at=NOW
    )
    assert decide(REFUND, ApprovalPolicy(), {}, now=NOW).action == "consult"
    assert decide(REFUND, ApprovalPolicy(), {}, now=NOW, grants=[grant]).layer == "grant:g"


@pytest.mark.parametrize(
    "policy",
    [
        ApprovalPolicy(deny_tools=("refund",)),
        # The skip switch is an allowing layer: it never ends a wait a person was asked for.
        ApprovalPolicy(skip_all_approvals_unsafe=True, deny_tools=("refund",)),
    ],
)
def test_a_waiting_call_the_new_policy_denies_is_denied(policy: ApprovalPolicy) -> None:
    verdict = decide(REFUND, policy, {}, now=NOW, waiting=waiting("refund", ["alice"]))
    assert (verdict.action, verdict.layer) == ("deny", "deny_list")
    assert "set while it waited" in verdict.detail


@pytest.mark.parametrize(
    "policy",
    [
        ApprovalPolicy(require="none", deciders=("bob",)),
        ApprovalPolicy(allow_tools=("refund",), deciders=("bob",)),
        ApprovalPolicy(skip_all_approvals_unsafe=True, deciders=("bob",)),
    ],
)
def test_a_policy_change_never_approves_a_waiting_call(policy: ApprovalPolicy) -> None:
    verdict = decide(REFUND, policy, {}, now=NOW, waiting=waiting("refund", ["alice"]))
    assert (verdict.action, verdict.deciders) == ("ask", ("bob",))


def test_a_waiting_call_keeps_its_quorum_and_never_opens_to_anyone() -> None:
    asked = waiting("pay", ["alice", "bob"], approvals_required=2)
    verdict = decide(PAY, ApprovalPolicy(), {}, now=NOW, waiting=asked)
    assert (verdict.deciders, verdict.approvals_required) == (("alice", "bob"), 2)


def test_an_escalated_waiting_call_goes_to_the_new_escalation() -> None:
    policy = ApprovalPolicy(
        deciders=("bob",), timeout_seconds=5, on_timeout="escalate", escalate_to=("dave",)
    )
    escalated = waiting("refund", ["carol"], escalated=True)
    assert decide(REFUND, policy, {}, now=NOW, waiting=escalated).deciders == ("dave",)
    fresh = waiting("refund", ["alice"])
    assert decide(REFUND, policy, {}, now=NOW, waiting=fresh).deciders == ("bob",)


def test_an_ask_is_the_request_a_person_is_shown_bound_to_exactly_these_arguments() -> None:
    spec = REFUND.model_copy(update={"approval_summary": "Refund {cents:money} to {who}"})
    arguments = {"cents": 1250, "who": "ann\u202eevil"}
    verdict = decide(spec, ApprovalPolicy(), arguments, now=NOW, grants=[])
    assert verdict.action == "ask"
    assert verdict.arguments_hash == arguments_hash(arguments)
    assert verdict.summary is not None and "12.50" in verdict.summary
    assert "\u202e" not in verdict.summary  # a bidi override cannot turn the line around
    # Key order does not matter; any other value, type or extra key does.
    assert arguments_hash({"who": "ann\u202eevil", "cents": 1250}) == verdict.arguments_hash
    for other in (
        {"cents": 1251, "who": "ann\u202eevil"},
        {"cents": 1250.0, "who": "ann\u202eevil"},
        {"cents": "1250", "who": "ann\u202eevil"},
        {"cents": 1250, "who": "ann\u202eevil", "note": None},
    ):
        assert arguments_hash(other) != verdict.arguments_hash


def test_a_worker_written_summary_comes_with_the_ask_and_nothing_comes_with_an_allow() -> None:
    spec = REFUND.model_copy(update={"approval_summary_on_worker": True})
    verdict = decide(spec, ApprovalPolicy(), {}, now=NOW, grants=[], worker_summary=" a\nline ")
    assert (verdict.action, verdict.summary) == ("ask", "a line")
    allowed = decide(LOOKUP, ApprovalPolicy(), {"q": 1}, now=NOW, grants=[])
    assert (allowed.action, allowed.arguments_hash, allowed.summary) == ("allow", "", None)


def test_a_replayed_run_from_before_the_live_deny_asks_anyone_with_the_request() -> None:
    policy = ApprovalPolicy(deny_tools=["refund"], deciders=["alice"])
    live = decide(REFUND, policy, {"a": 1}, now=NOW, grants=[])
    assert live.action == "deny"
    old = decide(REFUND, policy, {"a": 1}, now=NOW, grants=[], legacy_live_deny=True)
    assert (old.action, old.layer, old.deciders) == ("ask", "deny_list", ())
    assert old.arguments_hash == arguments_hash({"a": 1})
