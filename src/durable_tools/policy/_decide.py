"""The layered approval policy as one pure function: which layer decides a call, and how.

`decide` asks, in order:

1. `skip_all_approvals_unsafe`: allow everything (tests, sandboxes);
2. `deny_tools`, and `safety_rules` whose action is `deny`: deny;
3. the tool's and the run's own rules (`require`, the tool's `approval` and
   `requires_confirmation`, `safety_rules` whose action is `ask`, or a worker-side predicate
   whose answer the caller fetches when the verdict asks for it): a call they do not send
   to a person is allowed;
4. `allow_safe_tools`: allow tools safe under any input (never one a safety rule sent to a
   person: the rule says what the policy holds unsafe);
5. `allow_tools`: allow by name;
6. standing grants (run-scoped, and identity-scoped ones the caller fetched from the
   worker's store), each for the tool as its giver saw it (its input schema and safety
   metadata; `ToolBinding`), within its argument constraints and before its expiry, and only
   where its maker could have given the approval under the policy in force for this call
   (`grant_stands`): one of the policy's deciders, and never for a call that needs more
   than one approval;
7. a person: `quorum` distinct approvals for money-spending or chosen tools, from the
   policy's deciders (auto mode, when on, races that person with the tool's criteria).

A verdict may also be `consult`: a layer needs a fact only the caller can fetch (the
worker-side predicate's answer, the run's grants), and `decide` is asked again with it. A
call already waiting for a person (`waiting=`) is held to a changed policy: its deny list
and its deciders, never an allowing layer (a policy change never approves a call by itself).

The safety rules' matching (which rule a tool's declared `Safety` meets, and why) is the
second layer and part of the third, so it is here too, at the end.

Nothing here does I/O, reads a clock or draws randomness: the workflow passes `now`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal

from durable_tools.policy._grants import ToolBinding, grant_covers
from durable_tools.protocol._deciders import may_decide, name_key
from durable_tools.protocol._policy_types import (
    AutoApproval,
    CriteriaSet,
    SafetyRule,
    StandingGrant,
    plain_absolute_path,
)
from durable_tools.protocol._types import ApprovalPolicy
from durable_tools.protocol._wait_types import PendingApproval
from durable_tools.tools._approval_summary import call_summary
from durable_tools.tools._spec import Safety, ToolSpec

__all__ = [
    "SAFE_TAG",
    "Verdict",
    "arguments_hash",
    "decide",
    "describe_policy",
    "describe_safety_rule",
    "grant_stands",
    "is_safe_tool",
    "matched_safety_rule",
    "quorum_for",
    "safety_rule_reasons",
]

SAFE_TAG = "approval_safe"
"""A tool tagged so declares itself safe under any input (for `allow_safe_tools`)."""


@dataclass(frozen=True)
class Verdict:
    """What the policy decided for one call, and which layer decided it."""

    action: Literal["allow", "deny", "ask", "consult"]
    """`consult`: the layer named needs a fact the caller fetches (`needs`), then asks again."""
    layer: str
    """`skip_all`, `deny_list`, `safety_rule`, `rules`, `safe_tool`, `allow_list`,
    `grant:<id>`, `grants` (consulted) or `person`."""
    detail: str = ""
    needs: Literal["predicate", "grants"] | None = None
    """For `consult`: the worker-side predicate's answer, or the run's standing grants."""
    rules_ask: bool | None = False
    """What the tool's and the run's own rules said (None: a worker-side predicate decides
    and was not asked yet; False also when a layer before the rules decided)."""
    approvals_required: int = 1
    """For `ask`: distinct people who must approve (the two-person rule)."""
    deciders: tuple[str, ...] = ()
    """For `ask`: who may approve; empty means anyone who can reach the run."""
    grant_makers: tuple[str, ...] = ()
    """For `ask`: whose identity-scoped grant could stand in for the person (empty: anyone's)."""
    auto: AutoApproval | None = None
    """For `ask`: auto mode's evaluator, racing the person (None: auto mode is off)."""
    criteria: CriteriaSet | None = None
    """For `ask`: the criteria auto mode judges this tool's calls against (its own, else
    `*`); None leaves the call to the person alone."""
    set_aside: tuple[str, ...] = ()
    """Grants that covered the call but may not stand in for its approval, each with why."""
    arguments_hash: str = ""
    """For `ask`: what the person is asked to approve, exactly (`arguments_hash`); a
    decision must carry it back (`check_decision`). Empty for a call already waiting."""
    summary: str | None = None
    """For `ask`: the line the person reads of what the call does (`call_summary`: the
    tool's template rendered, or the worker's function's line), if the tool has one."""


def decide(
    spec: ToolSpec,
    policy: ApprovalPolicy,
    arguments: dict[str, Any],
    *,
    now: datetime,
    rules_ask: bool | None = None,
    grants: Iterable[StandingGrant] | None = None,
    waiting: PendingApproval | None = None,
    worker_summary: str | None = None,
    legacy_grants: bool = False,
    legacy_live_deny: bool = False,
) -> Verdict:
    """Decide one validated call under the run's live policy.

    Args:
        spec: The tool called.
        policy: The run's live approval policy.
        arguments: The call's validated arguments.
        now: The workflow's clock.
        rules_ask: Whether the tool's and the run's own rules send the call to a person,
            when the caller knows it already (the worker-side predicate's answer, or an
            earlier verdict's `rules_ask`); None: the rules are read here, and a tool whose
            predicate decides gets a `consult` verdict that `needs` it.
        grants: Standing grants that may cover the call: the run's own, and the one the
            identity store returned (if it was asked). None: not fetched yet, so a call the
            layers before them leave open gets a `consult` verdict that `needs` them.
        waiting: The request of a call already waiting for a person, when the policy changed
            since it was asked: the verdict denies it (deny list) or names who may decide it
            now, keeping the approvals it needs; it never allows it.
        worker_summary: The line the tool's worker function wrote of the call (the
            preflight's answer), for a tool whose summary is written on the worker.
        legacy_grants: Replay only: a history recorded before grants were checked against
            the policy in force, where any covering grant allowed the call.
        legacy_live_deny: Replay only: a history recorded before a policy change landing
            during the call's preflight could deny it: a call the live policy denies goes
            to a person (anyone) instead.

    Returns:
        The verdict and the layer that decided it; an `ask` names the request the person
        is shown (who may decide, how many must, the arguments hash and the summary).
    """
    if waiting is not None:
        return _refit(spec, policy, waiting)
    verdict = _layers(spec, policy, arguments, now, rules_ask, grants, legacy_grants)
    if verdict.action == "deny" and legacy_live_deny:
        verdict = replace(verdict, action="ask")
    if verdict.action != "ask":
        return verdict
    summary = call_summary(spec, arguments, worker_summary)
    return replace(verdict, arguments_hash=arguments_hash(arguments), summary=summary)


def _layers(
    spec: ToolSpec,
    policy: ApprovalPolicy,
    arguments: dict[str, Any],
    now: datetime,
    rules_ask: bool | None,
    grants: Iterable[StandingGrant] | None,
    legacy_grants: bool,
) -> Verdict:
    """`decide`'s layers in order, for a call not yet waiting (see the module)."""
    if policy.skip_all_approvals_unsafe:
        return Verdict("allow", "skip_all", "skip_all_approvals_unsafe is set")
    if spec.name in policy.deny_tools:
        return Verdict("deny", "deny_list", f"{spec.name} is in the policy's deny_tools")
    denied = _safety_rule(spec, policy, "deny")
    if denied:
        return Verdict("deny", "safety_rule", denied)
    # An `ask` rule asks whatever the tool's own rules (or its predicate, answered under an
    # older policy) said: it is the policy's rule, and the live policy's word counts.
    asked = _safety_rule(spec, policy, "ask")
    if asked:
        rules_ask = True
    elif rules_ask is None:
        rules_ask = _rules_ask(spec, policy)
        if rules_ask is None:
            detail = f"{spec.name}'s worker-side predicate decides"
            return Verdict("consult", "rules", detail, needs="predicate", rules_ask=None)
    if not rules_ask:
        return Verdict("allow", "rules", f"{spec.name} needs no approval under its rules")
    if policy.allow_safe_tools and not asked and is_safe_tool(spec):
        return Verdict("allow", "safe_tool", f"{spec.name} is safe under any input", rules_ask=True)
    if spec.name in policy.allow_tools:
        return Verdict(
            "allow", "allow_list", f"{spec.name} is in the policy's allow_tools", rules_ask=True
        )
    if grants is None:
        return Verdict("consult", "grants", "standing grants", needs="grants", rules_ask=True)
    set_aside: list[str] = []
    binding: ToolBinding | None = None
    for grant in grants:
        if grant.tool != spec.name:
            continue
        # A grant covers the tool only as its giver saw it. Digested once, and only when a
        # grant names the tool: hashing the schema is no cost of every call.
        binding = binding or ToolBinding.of(spec)
        if not grant_covers(grant, spec.name, arguments, now, binding):
            continue
        why_not = None if legacy_grants else grant_stands(grant, spec, policy)
        if why_not is None:
            return Verdict(
                "allow",
                f"grant:{grant.grant_id}",
                f"standing grant by {grant.granted_by}",
                rules_ask=True,
            )
        set_aside.append(f"{grant.grant_id}: {why_not}")
    needed = quorum_for(spec, policy)
    return Verdict(
        "ask",
        "person",
        f"{needed} approval{'s' if needed > 1 else ''} from "
        + (", ".join(policy.deciders) or "anyone")
        + (f" ({asked})" if asked else ""),
        rules_ask=True,
        approvals_required=needed,
        deciders=tuple(policy.deciders),
        grant_makers=_grant_makers(policy),
        auto=policy.auto,
        criteria=_criteria_for(policy, spec.name),
        set_aside=tuple(set_aside),
    )


def arguments_hash(arguments: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of the arguments: binds a decision to exactly them."""
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _refit(spec: ToolSpec, policy: ApprovalPolicy, waiting: PendingApproval) -> Verdict:
    """A call already waiting for a person, under a changed policy.

    An operator who tightens a policy mid-run (an incident) means the call on screen too:
    a tool the policy now denies is denied (also where the policy skips approvals: the call
    was asked, and only a person or its deadline ends that), and the deciders it names
    replace the call's, the escalation's people for an escalated call (an empty list,
    anyone, keeps the call's deciders: a change never opens a waiting call to more people).
    The number of approvals stays as it was asked (a quorum raised with nobody named could
    leave it unreachable); the quorum rules the calls asked from then on.
    """
    if spec.name in policy.deny_tools:
        detail = f"{spec.name} is in the policy's deny_tools (set while it waited)"
        return Verdict("deny", "deny_list", detail, rules_ask=True)
    denied = _safety_rule(spec, policy, "deny")
    if denied:
        return Verdict("deny", "safety_rule", f"{denied} (set while it waited)", rules_ask=True)
    named = policy.escalate_to if waiting.escalated and policy.escalate_to else policy.deciders
    deciders = tuple(named) or tuple(waiting.deciders)
    return Verdict(
        "ask",
        "person",
        "deciders " + ", ".join(deciders),
        rules_ask=True,
        approvals_required=waiting.approvals_required,
        deciders=deciders,
    )


def _safety_rule(spec: ToolSpec, policy: ApprovalPolicy, action: str) -> str:
    """Why the first of the policy's `action` safety rules matches `spec` ("" if none)."""
    found = matched_safety_rule(spec, policy.safety_rules, action)
    if found is None:
        return ""
    number, reasons = found
    return f"{spec.name} {' and '.join(reasons)}: safety rule {number} ({action})"


def _rules_ask(spec: ToolSpec, policy: ApprovalPolicy) -> bool | None:
    """Whether the tool's and the run's own rules send a call of `spec` to a person, or
    None when the tool's worker-side predicate decides."""
    if policy.require == "none":
        return False
    if policy.require == "all":
        return True
    if policy.require == "mutating" and spec.safety.mutating:
        return True
    if spec.approval == "always" or spec.safety.requires_confirmation:
        return True
    if spec.approval == "conditional":
        return None
    return False


def _grant_makers(policy: ApprovalPolicy) -> tuple[str, ...]:
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
    makers = _grant_makers(policy)
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


def _criteria_for(policy: ApprovalPolicy, tool: str) -> CriteriaSet | None:
    """The auto-mode criteria set for `tool` (its own, else `*`), or None."""
    if policy.auto is None:
        return None
    return policy.auto.criteria.get(tool) or policy.auto.criteria.get("*")


def describe_policy(policy: ApprovalPolicy) -> str:
    """The live policy in one line: its layers that differ from asking per tool."""
    parts = [f"require {policy.require}"]
    if policy.skip_all_approvals_unsafe:
        parts.insert(0, "SKIP ALL APPROVALS (unsafe)")
    if policy.deny_tools:
        parts.append("deny " + ", ".join(policy.deny_tools))
    if policy.allow_safe_tools:
        parts.append("safe tools allowed")
    for rule in policy.safety_rules:
        parts.append(f"{rule.action} {describe_safety_rule(rule)}")
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


# --------------------------------------------------------------------- safety rules
# Which of a policy's safety rules a tool matches, from its declared `Safety` alone: the
# second layer (`deny`) and part of the third (`ask`). Pure and total: a rule is read
# against the tool's spec (recorded with the run's catalog), so every replay matches the
# same rules. Where metadata is missing or odd, the rule matches (fail closed): a writing
# tool with no workspace root, or a root spelled in a way that is not plainly inside the
# workspace (`..`, `//`, a trailing `/`), writes outside it.


def _inside(path: str, root: str) -> bool:
    """Whether `path` is `root` or under it, both compared as plain absolute paths."""
    if root == "/":
        return path.startswith("/")
    return path == root or path.startswith(root + "/")


def _writes_outside(safety: Safety, roots: Iterable[str]) -> bool:
    if not safety.filesystem or safety.read_only:
        return False
    root = safety.workspace_root
    if root is None or not plain_absolute_path(root):
        return True
    allowed = tuple(roots)
    return bool(allowed) and not any(_inside(root, allowed_root) for allowed_root in allowed)


def safety_rule_reasons(rule: SafetyRule, spec: ToolSpec) -> list[str]:
    """The conditions of `rule` that `spec` meets, in words (empty: no match)."""
    safety = spec.safety
    reasons: list[str] = []
    if rule.shell and safety.shell:
        reasons.append("runs shell commands")
    if rule.filesystem and safety.filesystem:
        reasons.append("uses the filesystem")
    if rule.writes_outside_workspace and _writes_outside(safety, rule.workspace_roots):
        where = safety.workspace_root or "anywhere"
        reasons.append(f"writes files outside the workspace ({where})")
    if rule.networked and safety.networked:
        reasons.append("talks to other hosts")
    if rule.spends_money and safety.spends_money:
        reasons.append("spends money")
    if rule.mutating and safety.mutating:
        reasons.append("is not read-only")
    if safety.side_effect in rule.side_effects:
        reasons.append(f"has {safety.side_effect} side effects")
    # Tags compare as names do (case, width and invisible characters folded): a rule may
    # match more tools than its author spelled, never fewer.
    wanted = {name_key(tag) for tag in rule.tags}
    tagged = sorted(tag for tag in spec.tags if name_key(tag) in wanted)
    if tagged:
        reasons.append("is tagged " + ", ".join(tagged))
    return reasons


def matched_safety_rule(
    spec: ToolSpec, rules: Iterable[SafetyRule], action: str
) -> tuple[int, list[str]] | None:
    """The first rule with `action` that `spec` matches: its position (1-based) and why."""
    for number, rule in enumerate(rules, start=1):
        if rule.action != action:
            continue
        reasons = safety_rule_reasons(rule, spec)
        if reasons:
            return number, reasons
    return None


def describe_safety_rule(rule: SafetyRule) -> str:
    """`tools that run shell commands or write files outside /srv/ws`, for the CLI."""
    parts = [
        words
        for flag, words in (
            (rule.shell, "run shell commands"),
            (rule.filesystem, "use the filesystem"),
            (rule.networked, "talk to other hosts"),
            (rule.spends_money, "spend money"),
            (rule.mutating, "are not read-only"),
        )
        if flag
    ]
    if rule.writes_outside_workspace:
        roots = " or ".join(rule.workspace_roots)
        parts.append(
            f"write files outside {roots}" if roots else "write files no workspace root confines"
        )
    if rule.side_effects:
        parts.append("have " + " or ".join(rule.side_effects) + " side effects")
    if rule.tags:
        parts.append("are tagged " + " or ".join(rule.tags))
    return "tools that " + " or ".join(parts)
