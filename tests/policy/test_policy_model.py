"""The approval policy against a small reference model of who may approve what.

Hypothesis drives random sequences of policy changes, grants made by people under the
policy of the moment (spelled in any of the ways a name arrives: case, padding, full-width
letters, acting through a group) and decisions on pending calls; after every step the pure
`decide` and `check_decision` must agree with the model, which knows each name's person
and group directly instead of normalizing spellings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from pydantic import ValidationError

from durable_tools import ApprovalPolicy, PendingApproval, Safety, StandingGrant, ToolSpec
from durable_tools.policy._decide import decide
from durable_tools.policy._decisions import InvalidDecision, check_decision
from durable_tools.workflows import ApprovalDecision, Constraint

PEOPLE = ("alice", "bob", "carol", "dave")
GROUPS = ("group:ops", "group:finance")
TOOLS = {
    "refund": ToolSpec(name="refund", approval="always"),
    "pay": ToolSpec(name="pay", approval="always", safety=Safety(spends_money=True)),
    "lookup": ToolSpec(name="lookup", safety=Safety(read_only=True)),
}
NOW = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Name:
    """A decider name as sent, and who it really is."""

    sent: str
    person: str
    group: str | None = None


def spellings(person: str) -> st.SearchStrategy[str]:
    fullwidth = "".join(chr(ord(c) + 0xFEE0) for c in person)
    return st.sampled_from([person, person.upper(), f"  {person.title()} ", fullwidth])


@st.composite
def names(draw: st.DrawFn) -> Name:
    person = draw(st.sampled_from(PEOPLE))
    sent = draw(spellings(person))
    group = draw(st.none() | st.sampled_from(GROUPS))
    if group is None:
        return Name(sent, person)
    return Name(f"{sent} via {draw(st.sampled_from([group, group.upper()]))}", person, group)


@st.composite
def policies(draw: st.DrawFn) -> ApprovalPolicy | None:
    """A policy, or None when the drawn one is (rightly) refused by validation."""
    deciders = draw(st.lists(st.sampled_from(PEOPLE + GROUPS), unique=True, max_size=3))
    quorum = draw(st.integers(1, 3))
    allow = draw(st.lists(st.sampled_from(list(TOOLS)), unique=True, max_size=1))
    deny = draw(st.lists(st.sampled_from([t for t in TOOLS if t not in allow]), max_size=1))
    try:
        return ApprovalPolicy(
            deciders=tuple(deciders),
            quorum=quorum,
            quorum_tools=tuple(draw(st.lists(st.sampled_from(list(TOOLS)), max_size=2))),
            allow_tools=tuple(allow),
            deny_tools=tuple(deny),
        )
    except ValidationError:
        return None


@dataclass
class Model:
    """The reference: who may approve, by person and group, never by spelling."""

    policy: ApprovalPolicy = field(default_factory=ApprovalPolicy)
    grants: list[tuple[Name, str, int]] = field(default_factory=list)

    def approvals_needed(self, tool: str) -> int:
        spends = TOOLS[tool].safety.spends_money or tool in self.policy.quorum_tools
        return self.policy.quorum if spends else 1

    def may_approve(self, name: Name) -> bool:
        named = set(self.policy.deciders)
        return not named or name.person in named or (name.group in named)

    def expected(self, tool: str, amount: int) -> tuple[str, int]:
        if tool in self.policy.deny_tools:
            return "deny", 0
        if tool == "lookup" or tool in self.policy.allow_tools:
            return "allow", 0
        needed = self.approvals_needed(tool)
        for maker, granted_tool, bound in self.grants:
            if granted_tool == tool and amount <= bound and needed == 1 and self.may_approve(maker):
                return "allow", 0
        return "ask", needed


class PolicyMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.model = Model()
        self.grants: list[StandingGrant] = []
        self.pending: PendingApproval | None = None
        self.approvers: set[str] = set()

    @initialize()
    def start(self) -> None:
        self.model = Model()

    @rule(policy=policies())
    def set_policy(self, policy: ApprovalPolicy | None) -> None:
        if policy is not None:
            self.model.policy = policy

    @rule(maker=names(), tool=st.sampled_from(["refund", "pay"]), bound=st.integers(0, 100))
    def grant(self, maker: Name, tool: str, bound: int) -> None:
        # A grant comes with an approval: only someone who may approve now, of a call one
        # approval decides, can make one (check_decision refuses the rest).
        if not self.model.may_approve(maker) or self.model.approvals_needed(tool) > 1:
            return
        self.model.grants.append((maker, tool, bound))
        self.grants.append(
            StandingGrant(
                grant_id=f"g{len(self.grants)}",
                tool=tool,
                scope="run",
                constraints=(Constraint(path="amount", op="<=", value=bound),),
                granted_by=maker.sent,
                granted_at=NOW,
                expires_at=NOW + timedelta(days=1),
            )
        )

    @rule(tool=st.sampled_from(list(TOOLS)), amount=st.integers(0, 120))
    def call(self, tool: str, amount: int) -> None:
        policy = self.model.policy
        verdict = decide(
            TOOLS[tool],
            policy,
            {"amount": amount},
            rules_ask=tool != "lookup",
            grants=self.grants,
            now=NOW,
        )
        action, needed = self.model.expected(tool, amount)
        assert verdict.action == action, (verdict, self.model)
        if action == "ask":
            assert verdict.approvals_required == needed
            self.pending = PendingApproval(
                call_id="c",
                tool=tool,
                arguments={"amount": amount},
                arguments_hash="0" * 64,
                deciders=list(verdict.deciders),
                requested_at=NOW,
                approvals_required=needed,
            )
            self.approvers = set()

    @precondition(lambda self: self.pending is not None)
    @rule(name=names())
    def approve(self, name: Name) -> None:
        assert self.pending is not None
        decision = ApprovalDecision(call_id="c", approve=True, decider=name.sent)
        named = set(self.pending.deciders)  # the deciders when the call was asked
        allowed = not named or name.person in named or name.group in named
        expect_ok = allowed and name.person not in self.approvers
        try:
            check_decision(decision, {"c": self.pending}, set())
        except InvalidDecision:
            assert not expect_ok, (name, self.pending, self.approvers)
            return
        assert expect_ok, (name, self.pending, self.approvers)
        self.approvers.add(name.person)
        self.pending.approved_by.append(name.sent)
        if len(self.approvers) >= self.pending.approvals_required:
            self.pending = None

    @invariant()
    def grants_never_widen_a_quorum(self) -> None:
        for tool in ("refund", "pay"):
            if self.model.approvals_needed(tool) > 1:
                verdict = decide(
                    TOOLS[tool],
                    self.model.policy,
                    {"amount": 0},
                    rules_ask=True,
                    grants=self.grants,
                    now=NOW,
                )
                assert not verdict.layer.startswith("grant:"), verdict


TestPolicyModel = PolicyMachine.TestCase
