"""Plain-text rendering for the command line: tables, timelines, approvals, tool schemas.

Pure functions from the wire types to strings, so the CLI and the demo print the same
thing and tests can check the text without a terminal.

Call ids, tool names, arguments and results come from the model and from tools: every
rendered field goes through `terminal_safe`, so a hostile value cannot move the cursor,
erase a line or reverse text on the decider's terminal (a carriage return plus an ANSI erase once
made 5,000,000 cents read as 5).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from durable_tools.policy._decide import describe_policy
from durable_tools.protocol._invisible import INVISIBLE_CHARACTERS
from durable_tools.protocol._resume import reissue_command
from durable_tools.workflows import (
    PendingApproval,
    PendingAuthorization,
    RunSnapshot,
    SubagentWait,
    ToolCallRecord,
)
from durable_tools.workflows.loop._usage import describe_usage

__all__ = [
    "approval_commands",
    "clip",
    "duration_ms",
    "render_approval",
    "render_authorization",
    "render_decision",
    "render_record",
    "render_snapshot",
    "render_subagent_wait",
    "render_table",
    "render_timeline",
    "running_calls",
    "terminal_safe",
    "under_their_scripts",
]

# Characters a terminal acts on instead of printing: C0 controls, DEL and C1 controls
# (ESC and CSI start ANSI sequences; CR rewinds the line), line and paragraph separators,
# and the zero-width and bidirectional characters that hide or reorder text on screen.
_UNSAFE = re.compile(rf"[\x00-\x1f\x7f-\x9f\u2028\u2029{INVISIBLE_CHARACTERS}]")
_UNSAFE_KEEP_LINES = re.compile(rf"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029{INVISIBLE_CHARACTERS}]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_safe(text: object, *, multiline: bool = False) -> str:
    """`text` with every character a terminal would act on shown as a visible escape.

    ESC shows as `\\x1b`, CR as `\\x0d`, U+202E as `\\u202e`: what the reader sees is what
    the value holds. Used for every line of text the CLI prints.

    Args:
        text: The value (str()-ed).
        multiline: Keep newlines and tabs (free text such as a final answer); otherwise
            they are escaped too, so one field cannot forge another line.
    """
    pattern = _UNSAFE_KEEP_LINES if multiline else _UNSAFE
    return pattern.sub(_escape, str(text))


def clip(text: str | None, width: int) -> str:
    """One line of at most `width` characters (newlines folded, an ellipsis when cut)."""
    if text is None:
        return ""
    flat = terminal_safe(" ".join(str(text).split()))
    return flat if len(flat) <= width else flat[: max(width - 1, 0)] + "…"


def render_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A left-aligned text table with a header rule; cells are str()-ed, None as empty,
    and made `terminal_safe`."""
    cells = [[("" if c is None else terminal_safe(c)) for c in row] for row in rows]
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
    head = f"[turn {record.turn}] {terminal_safe(record.tool)}({clip(record.arguments, 60)})"
    state: str = record.status
    took = duration_ms(record)
    if took is not None:
        state += f" in {took:.0f} ms"
    if record.attempts > 1:
        state += f" after {record.attempts} attempts"
    line = f"{head} -> {state}"
    if record.result and record.status not in ("running", "awaiting_approval"):
        line += f": {clip(record.result, max(width - len(line) - 2, 30))}"
    if record.decided_by is not None:
        line += f" [{render_decision(record)}]"
    return line


def render_timeline(timeline: Sequence[ToolCallRecord], *, result_width: int = 60) -> str:
    """The tool-call timeline as a table."""
    if not timeline:
        return "(no tool calls)"
    rows = []
    for r in under_their_scripts(timeline):
        took = duration_ms(r)
        rows.append(
            [
                r.turn,
                r.call_id,
                f"  {r.tool}" if r.parent_call_id else r.tool,  # a script's host call
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


def under_their_scripts(timeline: Sequence[ToolCallRecord]) -> list[ToolCallRecord]:
    """The timeline with each code-mode script's host calls right after the script's call
    (calls of the same turn may have been recorded in between)."""
    children: dict[str, list[ToolCallRecord]] = {}
    for record in timeline:
        if record.parent_call_id is not None:
            children.setdefault(record.parent_call_id, []).append(record)
    ordered: list[ToolCallRecord] = []
    placed: set[int] = set()
    for record in timeline:
        if record.parent_call_id is not None and id(record) in placed:
            continue
        ordered.append(record)
        for child in children.pop(record.call_id, []):
            ordered.append(child)
            placed.add(id(child))
    return ordered


def approval_commands(
    run_id: str, approval: PendingApproval | SubagentWait, prefix: str = ""
) -> list[str]:
    """The exact commands that approve or deny a pending call (terminal-safe); `prefix`:
    the handler prefix of a host that is not an agent workflow (`--prefix`). For a
    sub-agent's wait `run_id` may be its parent's (the decision finds the sub-agent)."""
    # Each id one shell word: the call id is the model's, the run id may be an app's
    # (a chat's id, a schedule's name), and an operator pastes the command into a shell.
    run, call = terminal_safe(shlex.quote(run_id)), terminal_safe(shlex.quote(approval.call_id))
    digest = terminal_safe(shlex.quote(approval.arguments_hash))
    # Named deciders: say who decides (a group's member as themselves; the CLI checks the
    # membership in the inbox's tokens file and records `NAME via group:G`).
    who = " --as NAME" if approval.deciders else ""
    if prefix:
        who += f" --prefix {terminal_safe(shlex.quote(prefix))}"
    return [
        f"durable-tools approve {run} {call} --hash {digest}{who}",
        f"durable-tools deny {run} {call} --hash {digest}{who} --reason '...'",
    ]


def _when(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S %Z").strip() if moment else "none"


def render_approval(
    run_id: str, approval: PendingApproval, *, commands: bool = True, prefix: str = ""
) -> str:
    """A pending approval: what (the tool's summary first, when it gives one), arguments
    (redacted), hash, who and until when; `prefix` as for `approval_commands`."""
    # JSON with ASCII escapes: an argument value shows exactly what it holds.
    args = json.dumps(approval.arguments, ensure_ascii=True, sort_keys=True)
    tool = (
        approval.tool if approval.tool_label is None else f"{approval.tool_label} ({approval.tool})"
    )
    call = f"{tool} {args} (call {approval.call_id})"
    head = [f"approval needed: {call}"]
    if approval.summary:
        head = [f"approval needed: {approval.summary}", f"  call: {call}"]
    lines = [
        *head,
        f"  arguments hash: {approval.arguments_hash}",
        f"  deciders: {', '.join(approval.deciders) or 'anyone'}"
        f"   deadline: {_when(approval.deadline)}"
        + ("   (escalated)" if approval.escalated else ""),
    ]
    lines = [terminal_safe(line) for line in lines]
    if commands:
        cmds = approval_commands(run_id, approval, prefix)
        lines += [f"  approve: {cmds[0]}", f"  deny:    {cmds[1]}"]
    return "\n".join(lines)


def render_subagent_wait(run_id: str, wait: SubagentWait, *, prefix: str = "") -> str:
    """An approval a sub-agent of run `run_id` waits for: on which run, for what, and the
    commands that decide it through `run_id` (`prefix` as for `approval_commands`)."""
    what = wait.tool if wait.tool_label is None else f"{wait.tool_label} ({wait.tool})"
    lines = [
        f"waits on sub-agent run {wait.run_id}: approval of {what} (call {wait.call_id})",
        *([f"  {wait.summary}"] if wait.summary else []),
        f"  arguments hash: {wait.arguments_hash}",
    ]
    lines = [terminal_safe(line) for line in lines]
    cmds = approval_commands(run_id, wait, prefix)
    return "\n".join([*lines, f"  approve: {cmds[0]}", f"  deny:    {cmds[1]}"])


def render_decision(record: ToolCallRecord) -> str:
    """Who decided a call's approval, when, and why (empty when nobody decided it)."""
    if record.decided_by is None:
        return ""
    verdict = "denied" if record.status == "denied" else "approved"
    text = f"{verdict} by {record.decided_by}"
    if record.decided_at is not None:
        text += f" at {_when(record.decided_at)}"
    if record.decision_reason:
        text += f": {record.decision_reason}"
    return terminal_safe(text)


def render_authorization(authorization: PendingAuthorization, run_id: str = "RUN") -> str:
    """A pending OAuth authorization: the URL the person must open, when it expires, and
    how to get a new one."""
    scopes = " ".join(authorization.scopes) or "default scopes"
    head = (
        f"authorization needed: {authorization.tool} via {authorization.provider} ({scopes}), "
        f"call {authorization.call_id}"
    )
    text = f"{terminal_safe(head)}\n  open: {terminal_safe(authorization.authorization_url)}"
    if authorization.expires_at is not None:
        when = authorization.expires_at.isoformat(timespec="seconds")
        reissue = reissue_command(run_id, authorization.call_id)
        text += f"\n  link expires {when} (then: {terminal_safe(reissue)})"
    if authorization.deadline is not None:
        text += f"\n  waits until {authorization.deadline.isoformat(timespec='seconds')}"
    return text


def render_snapshot(
    run_id: str, snapshot: RunSnapshot, timeline: Sequence[ToolCallRecord], ui: str
) -> str:
    """What `durable-tools show` prints for a run a worker can answer for.

    Which calls are running is read from the timeline (each record's status is set as its
    call ends), not from `snapshot.running_tools`, which lists a whole group of calls
    until the last of them finishes.
    """
    lines = [
        f"run {run_id}  agent {snapshot.agent}  status {snapshot.status.value}",
        f"turns {snapshot.turn}  tool calls {snapshot.tool_calls}"
        + (f"  continued-as-new {snapshot.continued}x" if snapshot.continued else ""),
        f"UI: {ui}",
    ]
    if snapshot.usage.total_tokens:
        cost = "" if snapshot.cost is None else f"  cost {snapshot.cost:.4f}"
        lines.append(f"tokens: {describe_usage(snapshot.usage)}{cost}")
    if snapshot.policy is not None:
        lines.append(f"approval policy: {describe_policy(snapshot.policy)}")
    running = running_calls(timeline)
    if running:
        lines.append(f"running: {', '.join(running)}")
    lines = [terminal_safe(line) for line in lines]
    for approval in snapshot.pending_approvals:
        lines += ["", render_approval(run_id, approval)]
    for wait in snapshot.subagent_approvals:
        lines += ["", render_subagent_wait(run_id, wait)]
    for authorization in snapshot.pending_authorizations:
        lines += ["", render_authorization(authorization, run_id)]
    lines += ["", render_timeline(timeline)]
    decided = [r for r in timeline if r.decided_by is not None]
    if decided:
        lines += ["", "decisions:"]
        lines += [
            f"  call {terminal_safe(r.call_id)} ({terminal_safe(r.tool)}, turn {r.turn}): "
            + render_decision(r)
            for r in decided
        ]
    if snapshot.reason:
        lines += ["", f"reason: {terminal_safe(snapshot.reason)}"]
    if snapshot.final_answer is not None:
        lines += ["", "final answer:", terminal_safe(snapshot.final_answer, multiline=True)]
    return "\n".join(lines)


def running_calls(timeline: Sequence[ToolCallRecord]) -> list[str]:
    """Call ids of the calls running now, by their timeline records."""
    return [r.call_id for r in timeline if r.status == "running"]
