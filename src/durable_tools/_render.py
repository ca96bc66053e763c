"""Plain-text rendering for the command line: tables, timelines, approvals, tool schemas.

Pure functions from the wire types to strings, so the CLI and the demo print the same
thing and tests can check the text without a terminal.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from durable_tools.tools._spec import ToolSpec
from durable_tools.workflows import (
    PendingApproval,
    PendingAuthorization,
    RunSnapshot,
    ToolCallRecord,
)

__all__ = [
    "approval_commands",
    "clip",
    "duration_ms",
    "render_approval",
    "render_authorization",
    "render_record",
    "render_snapshot",
    "render_table",
    "render_timeline",
    "render_tool",
    "safety_summary",
    "tool_json",
]


def clip(text: str | None, width: int) -> str:
    """One line of at most `width` characters (newlines folded, an ellipsis when cut)."""
    if text is None:
        return ""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= width else flat[: max(width - 1, 0)] + "…"


def render_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A left-aligned text table with a header rule; cells are str()-ed, None as empty."""
    cells = [[("" if c is None else str(c)) for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    lines = [
        "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip(),
        "  ".join("-" * w for w in widths),
    ]
    lines += [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells
    ]
    return "\n".join(lines)


def duration_ms(record: ToolCallRecord) -> float | None:
    """Wall time of a call, when it started and finished."""
    if record.started_at is None or record.finished_at is None:
        return None
    return (record.finished_at - record.started_at).total_seconds() * 1000


def render_record(record: ToolCallRecord, *, width: int = 100) -> str:
    """One progress line for a tool call in its current state."""
    head = f"[turn {record.turn}] {record.tool}({clip(record.arguments, 60)})"
    state: str = record.status
    took = duration_ms(record)
    if took is not None:
        state += f" in {took:.0f} ms"
    if record.attempts > 1:
        state += f" after {record.attempts} attempts"
    line = f"{head} -> {state}"
    if record.result and record.status not in ("running", "awaiting_approval"):
        line += f": {clip(record.result, max(width - len(line) - 2, 30))}"
    return line


def render_timeline(timeline: Sequence[ToolCallRecord], *, result_width: int = 60) -> str:
    """The tool-call timeline as a table."""
    if not timeline:
        return "(no tool calls)"
    rows = []
    for r in timeline:
        took = duration_ms(r)
        rows.append(
            [
                r.turn,
                r.call_id,
                r.tool,
                r.status,
                r.attempts or "",
                "" if took is None else f"{took:.0f}",
                clip(r.arguments, 40),
                clip(r.result, result_width),
            ]
        )
    return render_table(
        ["turn", "call", "tool", "status", "tries", "ms", "arguments", "result"], rows
    )


def approval_commands(run_id: str, approval: PendingApproval) -> list[str]:
    """The exact commands that approve or deny a pending call."""
    return [
        f"durable-tools approve {run_id} {approval.call_id} --hash {approval.arguments_hash}",
        f"durable-tools deny {run_id} {approval.call_id} --reason '...'",
    ]


def _when(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S %Z").strip() if moment else "none"


def render_approval(run_id: str, approval: PendingApproval, *, commands: bool = True) -> str:
    """A pending approval: what, arguments (redacted), hash, who and until when."""
    args = json.dumps(approval.arguments, ensure_ascii=False, sort_keys=True)
    lines = [
        f"approval needed: {approval.tool} {args} (call {approval.call_id})",
        f"  arguments hash: {approval.arguments_hash}",
        f"  deciders: {', '.join(approval.deciders) or 'anyone'}"
        f"   deadline: {_when(approval.deadline)}"
        + ("   (escalated)" if approval.escalated else ""),
    ]
    if commands:
        cmds = approval_commands(run_id, approval)
        lines += [f"  approve: {cmds[0]}", f"  deny:    {cmds[1]}"]
    return "\n".join(lines)


def render_authorization(authorization: PendingAuthorization) -> str:
    """A pending OAuth authorization: the URL the person must open."""
    scopes = " ".join(authorization.scopes) or "default scopes"
    return (
        f"authorization needed: {authorization.tool} via {authorization.provider} ({scopes}), "
        f"call {authorization.call_id}\n  open: {authorization.authorization_url}"
    )


def render_snapshot(
    run_id: str, snapshot: RunSnapshot, timeline: Sequence[ToolCallRecord], ui: str
) -> str:
    """What `durable-tools show` prints for a run a worker can answer for."""
    lines = [
        f"run {run_id}  agent {snapshot.agent}  status {snapshot.status.value}",
        f"turns {snapshot.turn}  tool calls {snapshot.tool_calls}"
        + (f"  continued-as-new {snapshot.continued}x" if snapshot.continued else ""),
        f"UI: {ui}",
    ]
    if snapshot.running_tools:
        lines.append(f"running: {', '.join(snapshot.running_tools)}")
    for approval in snapshot.pending_approvals:
        lines += ["", render_approval(run_id, approval)]
    for authorization in snapshot.pending_authorizations:
        lines += ["", render_authorization(authorization)]
    lines += ["", render_timeline(timeline)]
    if snapshot.reason:
        lines += ["", f"reason: {snapshot.reason}"]
    if snapshot.final_answer is not None:
        lines += ["", "final answer:", snapshot.final_answer]
    return "\n".join(lines)


def safety_summary(spec: ToolSpec) -> str:
    """A short line: read-only or mutating, idempotent, side effects, approval."""
    s = spec.safety
    parts = ["read-only" if s.read_only else f"mutating ({s.side_effect} effects)"]
    if s.idempotent and not s.read_only:
        parts.append("idempotent")
    for flag, label in (
        (s.networked, "network"),
        (s.filesystem, "filesystem"),
        (s.shell, "shell"),
        (s.spends_money, "spends money"),
    ):
        if flag:
            parts.append(label)
    approval = "always" if s.requires_confirmation else spec.approval
    parts.append(f"approval: {approval}")
    if spec.oauth is not None:
        parts.append(f"oauth: {spec.oauth.provider}")
    if spec.loading != "always":
        parts.append(f"loading: {spec.loading}")
    return ", ".join(parts)


def tool_json(spec: ToolSpec) -> dict[str, Any]:
    """A tool as the model sees it, plus its safety and approval rules."""
    return {
        "name": spec.name,
        "description": spec.description,
        "parameters": spec.input_schema,
        "safety": spec.safety.model_dump(mode="json"),
        "approval": spec.approval,
        "summary": safety_summary(spec),
        "loading": str(spec.loading),
        "oauth": spec.oauth.model_dump(mode="json") if spec.oauth else None,
    }


def render_tool(spec: ToolSpec) -> str:
    """A tool's name, description, safety summary and parameter schema."""
    schema = json.dumps(spec.input_schema, indent=2, ensure_ascii=False)
    body = "\n".join("    " + line for line in schema.splitlines())
    description = spec.description.strip() or "(no description)"
    return f"{spec.name}\n  {description}\n  [{safety_summary(spec)}]\n  parameters:\n{body}"
