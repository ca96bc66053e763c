"""Which of a policy's safety rules a tool matches, from its declared `Safety` alone.

Pure and total: a rule is read against the tool's spec (recorded with the run's catalog),
so every replay matches the same rules. Where metadata is missing or odd, the rule matches
(fail closed): a writing tool with no workspace root, or a root spelled in a way that is not
plainly inside the workspace (`..`, `//`, a trailing `/`), writes outside it.
"""

from __future__ import annotations

from collections.abc import Iterable

from durable_tools.protocol._deciders import name_key
from durable_tools.protocol._policy_types import SafetyRule, plain_absolute_path
from durable_tools.tools._spec import Safety, ToolSpec

__all__ = ["describe_safety_rule", "matched_safety_rule", "safety_rule_reasons"]


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
