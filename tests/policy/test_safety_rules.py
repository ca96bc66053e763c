"""Safety rules: a policy that decides on what tools may do, not on their names.

"Confirm anything that runs a shell, writes files outside the workspace root, or has
irreversible side effects" is one `SafetyRule`; these tests read it through `decide`, the
one policy entry, and attack the policy file it comes from.
"""

from __future__ import annotations

import json
import tomllib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from durable_tools import ApprovalPolicy, PendingApproval, Safety, ToolSpec
from durable_tools.cli._errors import CliError
from durable_tools.cli._policy_flags import load_policy_file
from durable_tools.policy._decide import decide, describe_policy
from durable_tools.workflows import SafetyRule

NOW = datetime(2026, 1, 1, tzinfo=UTC)
WS = "/srv/ws"

CONFIRM_RISKY = SafetyRule(
    shell=True, writes_outside_workspace=True, side_effects=("irreversible",)
)
"""The issue's rule, word for word."""

SHELL = ToolSpec(name="run_command", safety=Safety(shell=True, filesystem=True, workspace_root=WS))
WRITE_IN = ToolSpec(name="write_file", safety=Safety(filesystem=True, workspace_root=WS))
WRITE_ANYWHERE = ToolSpec(name="save_report", safety=Safety(filesystem=True))
READ = ToolSpec(name="read_file", safety=Safety(read_only=True, filesystem=True, workspace_root=WS))
DELETE_ACCOUNT = ToolSpec(name="delete_account", safety=Safety(side_effect="irreversible"))
EMAIL = ToolSpec(name="send_email", safety=Safety(networked=True, side_effect="external"))


def verdict(spec: ToolSpec, *rules: SafetyRule, **policy: Any) -> tuple[str, str]:
    found = decide(spec, ApprovalPolicy(safety_rules=rules, **policy), {}, now=NOW, grants=())
    return found.action, found.layer


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (SHELL, ("ask", "person")),
        (WRITE_ANYWHERE, ("ask", "person")),
        (DELETE_ACCOUNT, ("ask", "person")),
        (WRITE_IN, ("allow", "rules")),
        (READ, ("allow", "rules")),
        (EMAIL, ("allow", "rules")),
    ],
)
def test_one_rule_confirms_shells_outside_writes_and_irreversible_effects(
    spec: ToolSpec, expected: tuple[str, str]
) -> None:
    assert verdict(spec, CONFIRM_RISKY) == expected


def test_the_person_is_told_which_rule_asked_and_why() -> None:
    found = decide(SHELL, ApprovalPolicy(safety_rules=(CONFIRM_RISKY,)), {}, now=NOW, grants=())
    assert "run_command runs shell commands: safety rule 1 (ask)" in found.detail


def test_an_ask_rule_asks_even_where_require_none_and_the_tools_own_rules_do_not() -> None:
    # `require="none"` plus safety rules: ask for exactly what the rules name.
    assert verdict(SHELL, CONFIRM_RISKY, require="none") == ("ask", "person")
    assert verdict(WRITE_IN, CONFIRM_RISKY, require="none") == ("allow", "rules")


def test_an_ask_rule_outweighs_a_worker_predicates_no() -> None:
    # The gate asks `decide` again with the predicate's answer under the live policy: a
    # rule set while the predicate ran still asks.
    conditional = ToolSpec(name="tip", approval="conditional", safety=Safety(shell=True))
    policy = ApprovalPolicy(safety_rules=(CONFIRM_RISKY,))
    assert decide(conditional, policy, {}, now=NOW, rules_ask=False, grants=()).action == "ask"
    # ... and a tool it matches never waits for the predicate at all.
    assert decide(conditional, policy, {}, now=NOW).needs == "grants"


def test_a_deny_rule_denies_before_any_allowing_layer() -> None:
    deny_shells = SafetyRule(action="deny", shell=True)
    for policy in (
        {"allow_tools": ("run_command",)},
        {"allow_safe_tools": True, "require": "none"},
    ):
        assert verdict(SHELL, deny_shells, **policy) == ("deny", "safety_rule")
    assert verdict(READ, deny_shells) == ("allow", "rules")


def test_a_tool_the_rule_asks_for_is_not_a_safe_tool_however_it_is_tagged() -> None:
    tagged = ToolSpec(
        name="run_command", tags=("approval_safe",), safety=Safety(shell=True, read_only=True)
    )
    assert verdict(tagged, CONFIRM_RISKY, allow_safe_tools=True) == ("ask", "person")
    # Naming the tool is still an operator's explicit word.
    assert verdict(tagged, CONFIRM_RISKY, allow_tools=("run_command",)) == ("allow", "allow_list")


def test_a_deny_rule_set_while_a_call_waits_denies_it() -> None:
    waiting = PendingApproval.model_validate(
        {
            "call_id": "c",
            "tool": "run_command",
            "arguments": {},
            "arguments_hash": "0" * 64,
            "requested_at": NOW,
        }
    )
    policy = ApprovalPolicy(safety_rules=(SafetyRule(action="deny", shell=True),))
    found = decide(SHELL, policy, {}, now=NOW, waiting=waiting)
    assert (found.action, found.layer) == ("deny", "safety_rule")
    # An ask rule never changes who decides a waiting call.
    found = decide(
        SHELL, ApprovalPolicy(safety_rules=(CONFIRM_RISKY,)), {}, now=NOW, waiting=waiting
    )
    assert found.action == "ask"


@pytest.mark.parametrize(
    ("root", "outside"),
    [
        ("/srv/ws", False),
        ("/srv/ws/project", False),
        ("/srv/ws-evil", True),  # a prefix of the text is not a parent directory
        ("/srv", True),
        ("/srv/ws/../../etc", True),  # spelled to look inside: not plain, so outside
        ("/srv//ws", True),
        ("/srv/ws/", True),
        ("/SRV/ws", True),  # paths are case-sensitive: another directory
        ("srv/ws", True),
        ("", True),
        (None, True),
    ],
)
def test_writes_outside_named_roots_fail_closed_on_odd_spellings(
    root: str | None, outside: bool
) -> None:
    rule = SafetyRule(writes_outside_workspace=True, workspace_roots=("/srv/ws",))
    spec = ToolSpec(name="w", safety=Safety(filesystem=True, workspace_root=root))
    assert verdict(spec, rule, require="none")[0] == ("ask" if outside else "allow")


def test_a_read_only_file_tool_never_writes_outside() -> None:
    rule = SafetyRule(writes_outside_workspace=True, workspace_roots=("/elsewhere",))
    assert verdict(READ, rule, require="none") == ("allow", "rules")
    assert verdict(WRITE_IN, rule, require="none") == ("ask", "person")


@pytest.mark.parametrize(
    "tag", ["Payments", "PAYMENTS", "pay\u200bments", "\uff50\uff41\uff59ments"]
)
def test_tags_match_however_they_are_spelled(tag: str) -> None:
    spec = ToolSpec(name="charge", tags=(tag,), safety=Safety(read_only=True))
    assert verdict(spec, SafetyRule(tags=("payments",)), require="none")[0] == "ask"


def test_unannotated_tools_count_as_external() -> None:
    # Safety's defaults assume the worst: a rule on external effects catches a tool that
    # declared nothing.
    rule = SafetyRule(side_effects=("external",))
    assert verdict(ToolSpec(name="mystery"), rule, require="none")[0] == "ask"


def test_the_policy_line_names_the_rules() -> None:
    line = describe_policy(ApprovalPolicy(safety_rules=(CONFIRM_RISKY,)))
    assert "ask tools that run shell commands or write files no workspace root confines" in line


POLICY_TOML = """
require = "tool"

[[safety_rules]]
shell = true
writes_outside_workspace = true
workspace_roots = ["/srv/ws"]
side_effects = ["irreversible"]
"""


def test_a_policy_file_gives_the_rule() -> None:
    policy = ApprovalPolicy.model_validate(tomllib.loads(POLICY_TOML))
    assert policy.safety_rules == (
        SafetyRule(
            shell=True,
            writes_outside_workspace=True,
            workspace_roots=("/srv/ws",),
            side_effects=("irreversible",),
        ),
    )
    # It crosses to the run and back as JSON unchanged.
    assert ApprovalPolicy.model_validate_json(policy.model_dump_json()) == policy


@pytest.mark.parametrize(
    ("rule", "names"),
    [
        ({"shel": True}, "shel"),  # a typo is an error, never a rule that matches nothing
        ({"shell": "yes"}, "valid boolean"),
        ({"shell": "false"}, "valid boolean"),  # strings are not flags, even honest ones
        ({"shell": 1}, "valid boolean"),
        ({"side_effects": ["irreversable"]}, "irreversible"),
        ({"side_effects": ["IRREVERSIBLE"]}, "irreversible"),
        ({"action": "allow", "shell": True}, "'ask' or 'deny'"),
        ({}, "needs at least one condition"),
        ({"shell": False}, "needs at least one condition"),
        ({"workspace_roots": ["/srv"], "shell": True}, "only with writes_outside_workspace"),
        ({"writes_outside_workspace": True, "workspace_roots": ["srv"]}, "absolute"),
        ({"writes_outside_workspace": True, "workspace_roots": ["/srv/../etc"]}, "normalised"),
        ({"writes_outside_workspace": True, "workspace_roots": ["/srv/\x00"]}, "normalised"),
        ({"writes_outside_workspace": True, "workspace_roots": ["/a/"]}, "normalised"),
        ({"tags": [""]}, "at least 1 character"),
        ({"tags": ["x" * 101]}, "at most 100 characters"),
        ({"tags": [7]}, "valid string"),
    ],
)
def test_a_hostile_or_mistyped_rule_is_refused_naming_what_is_wrong(
    rule: dict[str, Any], names: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        ApprovalPolicy.model_validate({"safety_rules": [rule]})
    assert names in str(refused.value)


def test_huge_policies_are_refused_not_read() -> None:
    many = [{"shell": True}] * 33
    with pytest.raises(ValidationError, match="at most 32"):
        ApprovalPolicy.model_validate({"safety_rules": many})
    roots = ["/r" + str(n) for n in range(65)]
    with pytest.raises(ValidationError, match="at most 64"):
        SafetyRule.model_validate({"writes_outside_workspace": True, "workspace_roots": roots})
    with pytest.raises(ValidationError):
        ApprovalPolicy.model_validate_json(json.dumps({"safety_rules": [{"tags": ["t"] * 10_000}]}))


def test_a_policy_file_with_a_typo_is_an_error_naming_the_rule_and_key(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(POLICY_TOML + '\n[[safety_rules]]\nshel = true\nside_effects = ["gone"]\n')
    with pytest.raises(CliError) as refused:
        load_policy_file(str(path))
    text = str(refused.value)
    assert f"invalid approval policy in {path}" in text
    assert "safety_rules.1.shel" in text and "Extra inputs are not permitted" in text
    assert "safety_rules.1.side_effects.0" in text
    good = tmp_path / "good.toml"
    good.write_text(POLICY_TOML)
    assert load_policy_file(str(good)).safety_rules[0].shell is True
