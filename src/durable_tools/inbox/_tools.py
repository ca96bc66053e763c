"""A run's tools page and its JSON: the catalog the run recorded when it loaded its tools
(the one it validated and classified its calls by), each tool with its label, source,
safety metadata, limits, and the approval rule the run's live policy holds for it.

The approval rule is the policy's own pure `decide` asked about the tool, never a second
reading of the policy: the answer is what a call of the tool would meet now, before the
two facts `decide` only knows per call (a worker-side predicate's answer over the
arguments, and standing grants whose constraints the arguments may or may not meet).

Output is bounded: a page holds at most `MAX_PAGE_SIZE` tools (a registry of a thousand
OpenAPI operations pages through), and long descriptions and notes are cut for the page.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from durable_tools.client import DurableTools
from durable_tools.client.render._tools import approval_label, tool_json
from durable_tools.policy._decide import Verdict, decide, describe_policy
from durable_tools.protocol._types import ApprovalPolicy
from durable_tools.tools import ToolRegistry
from durable_tools.tools._spec import ToolSpec
from durable_tools.workflows import RunSnapshot

from ._data import read_record, readable
from ._hosts import run_handle
from ._run_record import RunRecords

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "MAX_PAGE_SIZE",
    "MAX_SHOWN_CHARS",
    "ApprovalRule",
    "ToolRow",
    "ToolsPage",
    "approval_rule",
    "load_run_tools",
    "page_bounds",
    "registry_tools",
    "source_kind",
    "tools_json",
]

DEFAULT_PAGE_SIZE = 100
"""Tools per page when the request names no `limit`."""
MAX_PAGE_SIZE = 500
"""Most tools one page or one API answer holds."""
MAX_SHOWN_CHARS = 2_000
"""Longest description or safety note the page shows (the JSON gives them whole)."""

_KINDS = {
    "function": "python",
    "mcp": "mcp",
    "a2a": "a2a",
    "sub-agent": "sub-agent",
    "callback": "callback",
    "flow": "flow",
}


def source_kind(spec: ToolSpec) -> str:
    """Where a tool comes from, in one word: python, mcp, openapi, http, a2a, sub-agent,
    callback or flow (an HTTP tool read from an OpenAPI document is `openapi`)."""
    if spec.transport == "http":
        return "openapi" if (spec.source or "").startswith("openapi:") else "http"
    return _KINDS.get(spec.transport, str(spec.transport))


@dataclass(frozen=True)
class ApprovalRule:
    """What the run's live policy does with a call of one tool, and why."""

    action: str
    """`allow`, `deny`, `ask`, or `per call` (a worker-side predicate decides)."""
    words: str
    """`asks for approval`, `allowed without approval`, `denied`, ..."""
    why: str
    """The deciding layer's reason (`decide`'s detail)."""
    layer: str
    approvals_required: int = 1
    deciders: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "words": self.words,
            "why": self.why,
            "layer": self.layer,
            "approvals_required": self.approvals_required,
            "deciders": list(self.deciders),
        }


def approval_rule(spec: ToolSpec, policy: ApprovalPolicy | None, now: datetime) -> ApprovalRule:
    """The rule the run's policy holds for `spec`, from `decide` itself.

    Asked with no arguments and no standing grants: a grant covers calls, not a tool, so a
    tool that asks may still have some calls allowed by a grant (the page says so).
    """
    verdict: Verdict = decide(spec, policy or ApprovalPolicy(), {}, now=now, grants=())
    if verdict.action == "consult":  # only the predicate is left: grants were given
        return ApprovalRule(
            "per call", "asks when its predicate says so", verdict.detail, verdict.layer
        )
    words = {
        "allow": "allowed without approval",
        "deny": "denied",
        "ask": "asks for approval",
    }[verdict.action]
    if verdict.action == "ask" and verdict.approvals_required > 1:
        words = f"asks for {verdict.approvals_required} approvals"
    return ApprovalRule(
        verdict.action,
        words,
        verdict.detail,
        verdict.layer,
        verdict.approvals_required,
        verdict.deciders,
    )


def _limits(spec: ToolSpec) -> dict[str, Any]:
    """Timeouts, retries and rate/concurrency limits, as JSON."""
    policy = spec.policy
    return {
        **policy.model_dump(
            mode="json",
            include={
                "start_to_close_timeout",
                "schedule_to_close_timeout",
                "heartbeat_timeout",
                "max_concurrent",
                "rate_limit",
                "max_calls_per_run",
                "task_queue",
            },
        ),
        "retry": policy.retry.model_dump(mode="json"),
    }


def _cut(text: str | None) -> str:
    if not text:
        return ""
    return text if len(text) <= MAX_SHOWN_CHARS else text[:MAX_SHOWN_CHARS] + "…"


@dataclass(frozen=True)
class ToolRow:
    """One tool of a run's catalog, as the page and the API show it."""

    spec: ToolSpec
    rule: ApprovalRule

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def label(self) -> str:
        return self.spec.label or ""

    @property
    def kind(self) -> str:
        return source_kind(self.spec)

    @property
    def description(self) -> str:
        return _cut(self.spec.description)

    @property
    def safety_notes(self) -> str:
        return _cut(self.spec.safety_notes)

    @property
    def flags(self) -> list[str]:
        """The safety flags set, in words (`runs shell commands`, ...)."""
        s = self.spec.safety
        flags = ["read-only" if s.read_only else f"{s.side_effect} side effects"]
        for on, words in (
            (s.idempotent and not s.read_only, "idempotent"),
            (s.shell, "runs shell commands"),
            (s.filesystem, "uses the filesystem"),
            (s.networked, "networked"),
            (s.spends_money, "spends money"),
            (s.requires_confirmation, "requires confirmation"),
        ):
            if on:
                flags.append(words)
        if s.workspace_root:
            flags.append(f"workspace {s.workspace_root}")
        return flags

    @property
    def limits(self) -> dict[str, Any]:
        return _limits(self.spec)

    def as_json(self) -> dict[str, Any]:
        """The tool as `tool_json` gives it (the CLI's `tools --json`), with its label,
        kind, tags, every limit, and the approval rule in force."""
        return {
            **tool_json(self.spec),
            "label": self.spec.label,
            "kind": self.kind,
            "source": self.spec.source,
            "tags": list(self.spec.tags),
            "safety_notes": self.spec.safety_notes,
            "own_approval": approval_label(self.spec),
            "limits": self.limits,
            "approval_in_force": self.rule.as_json(),
        }


@dataclass(frozen=True)
class ToolsPage:
    """A page of a catalog: a run's recorded one, or the inbox's own `--tools` registry."""

    run_id: str | None
    """The run whose recorded catalog this is; None for the inbox's registry."""
    snapshot: RunSnapshot | None
    policy: ApprovalPolicy
    """The policy the approval column reads: the run's live one, else the default."""
    recorded: bool
    """Whether the catalog was found (the run's history read, or a registry given)."""
    total: int
    offset: int
    limit: int
    rows: list[ToolRow]
    unreadable: list[str] = field(default_factory=list)
    """Tools of this page recorded in a form this version cannot read."""

    @property
    def policy_line(self) -> str:
        """The policy in one line."""
        return describe_policy(self.policy)

    @property
    def next_offset(self) -> int | None:
        following = self.offset + self.limit
        return following if following < self.total else None

    @property
    def previous_offset(self) -> int | None:
        return max(self.offset - self.limit, 0) if self.offset > 0 else None


def _page(
    specs: Mapping[str, Callable[[], ToolSpec | None]],
    policy: ApprovalPolicy,
    *,
    offset: int,
    limit: int,
) -> tuple[list[ToolRow], list[str]]:
    """The rows of one page of `specs` (read lazily: only the page's are parsed), by name."""
    now = datetime.now(UTC)
    rows: list[ToolRow] = []
    unreadable: list[str] = []
    for name in sorted(specs)[offset : offset + limit]:
        spec = specs[name]()
        if spec is None:
            unreadable.append(name)
        else:
            rows.append(ToolRow(spec, approval_rule(spec, policy, now)))
    return rows, unreadable


def page_bounds(offset: str | None, limit: str | None) -> tuple[int, int]:
    """`offset` and `limit` of a request's query, each read as an integer and clamped
    (0 and up; 1 to `MAX_PAGE_SIZE`); anything unreadable is the default."""

    def number(text: str | None, default: int) -> int:
        if text is None or not text.isascii() or not text.isdigit() or len(text) > 9:
            return default
        return int(text)

    return number(offset, 0), min(max(number(limit, DEFAULT_PAGE_SIZE), 1), MAX_PAGE_SIZE)


async def load_run_tools(
    tools: DurableTools, run_id: str, records: RunRecords, *, offset: int, limit: int
) -> ToolsPage:
    """A page of run `run_id`'s recorded catalog, each tool under the run's live policy.

    Raises:
        PayloadsEncrypted: the run's payloads are encrypted and this inbox has no keys.
        RPCError: the run could not be read (an unknown run: not found).
    """
    run = await run_handle(tools, run_id)
    snapshot = await readable(run.status())
    record = await read_record(records, run_id, snapshot.continued)
    catalog = record.catalog or {}
    policy = snapshot.policy or ApprovalPolicy()
    specs = {name: functools.partial(record.spec, name) for name in catalog}
    rows, unreadable = _page(specs, policy, offset=offset, limit=limit)
    return ToolsPage(
        run_id,
        snapshot,
        policy,
        record.catalog is not None,
        len(specs),
        offset,
        limit,
        rows,
        unreadable,
    )


def registry_tools(registry: ToolRegistry | None, *, offset: int, limit: int) -> ToolsPage:
    """A page of the inbox's own `--tools` registry, under the default policy."""
    found = {spec.name: spec for spec in registry.specs()} if registry is not None else {}
    policy = ApprovalPolicy()
    specs = {name: functools.partial(found.get, name) for name in found}
    rows, unreadable = _page(specs, policy, offset=offset, limit=limit)
    return ToolsPage(
        None, None, policy, registry is not None, len(specs), offset, limit, rows, unreadable
    )


def tools_json(found: ToolsPage) -> dict[str, Any]:
    """`/api/runs/{id}/tools`'s (and `/api/tools`') answer for one page."""
    return {
        "run_id": found.run_id,
        "agent": found.snapshot.agent if found.snapshot is not None else None,
        "recorded": found.recorded,
        "policy": found.policy_line,
        "total": found.total,
        "offset": found.offset,
        "limit": found.limit,
        "next_offset": found.next_offset,
        "tools": [row.as_json() for row in found.rows],
        "unreadable": found.unreadable,
    }
