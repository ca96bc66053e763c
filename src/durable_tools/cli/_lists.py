"""Listing runs: `durable-tools runs` and `durable-tools pending`."""

from __future__ import annotations

import argparse
import asyncio
import shlex
from collections.abc import Awaitable, Callable
from typing import Literal

from temporalio.client import Client, WorkflowExecution

from durable_tools import search_attributes as sa
from durable_tools.client import RunSummary
from durable_tools.client.inputs._answer import render_pending_input
from durable_tools.client.render._text import (
    render_approval,
    render_authorization,
    render_subagent_wait,
    render_table,
    terminal_safe,
)
from durable_tools.client.runs._hosts import handler_prefixes, waits_on
from durable_tools.client.runs._watch import ENCRYPTED_NOTE, PayloadsEncrypted, status_quietly
from durable_tools.protocol._types import WAITING_STATUSES, status_in
from durable_tools.workflows import RunSnapshot, RunStatus

from ._commands import tools_for
from ._errors import translate_rpc_errors
from ._output import dump_json, echo
from ._run_filters import (
    RunFilters,
    Scan,
    filters_from,
    identity_of,
    scan_runs,
    visibility_query,
)

__all__ = ["PENDING_QUERIES_AT_ONCE", "cmd_pending", "cmd_runs"]


def _summary_rows(summaries: list[RunSummary]) -> str:
    rows = [
        [
            s.run_id,
            s.agent or "",
            s.status or "",
            s.execution_status,
            s.pending_approvals or "",
            s.awaiting_tool or "",
            s.started_at.strftime("%Y-%m-%d %H:%M:%S") if s.started_at else "",
        ]
        for s in summaries
    ]
    return render_table(
        ["run", "agent", "status", "execution", "approvals", "awaiting", "started"], rows
    )


_AGENT_RUNS = "WorkflowType = 'AgentWorkflow'"


def _identity_check(
    client: Client, filters: RunFilters
) -> Callable[[WorkflowExecution], Awaitable[bool | None]] | None:
    if not filters.identity_wanted():
        return None

    async def matches(execution: WorkflowExecution) -> bool | None:
        identity = await identity_of(client, execution)
        return None if identity is None else filters.identity_matches(identity)

    return matches


def _scan_notes(scan: Scan, what: str) -> None:
    """Say on stderr what a filtered listing could not look at."""
    if scan.unread:
        echo(f"note: {scan.unread} {what} could not be read to check --user/--tenant", err=True)
    if scan.stopped_at is not None:
        echo(
            f"note: the filters read the newest {scan.stopped_at} {what} and stopped; "
            "narrow with --since or --agent to reach older ones",
            err=True,
        )


async def cmd_runs(args: argparse.Namespace) -> int:
    """Recent runs, newest first."""
    filters = filters_from(args)
    query = visibility_query(_AGENT_RUNS, filters, status=args.status)
    tools = await tools_for(args)
    async with translate_rpc_errors():
        scan = await scan_runs(
            tools.client, query, args.limit, _identity_check(tools.client, filters)
        )
    summaries = [RunSummary.of(execution) for execution in scan.runs]
    _scan_notes(scan, "runs")
    if args.json:
        dump_json([s.model_dump(mode="json") for s in summaries])
    elif summaries:
        echo(_summary_rows(summaries))
    else:
        echo("no runs" + (f" with status {args.status}" if args.status else "") + " match")
    return 0


PENDING_QUERIES_AT_ONCE = 16
"""Runs `durable-tools pending` queries at once (each asks a worker for the run's calls)."""

_Polled = RunSnapshot | Literal["encrypted"] | None


def _only_tool(snapshot: RunSnapshot, tool: str) -> RunSnapshot:
    """The snapshot with only the waiting calls of `tool`."""
    return snapshot.model_copy(
        update={
            name: [item for item in getattr(snapshot, name) if item.tool == tool]
            for name in (
                "pending_approvals",
                "pending_authorizations",
                "pending_inputs",
                "pending_callbacks",
                "subagent_approvals",
            )
        }
    )


async def cmd_pending(args: argparse.Namespace) -> int:
    """Every run waiting on someone (a person's approval, authorization or answer, a
    callback client), with its waiting calls when a worker answers."""
    filters = filters_from(args)
    # --tool is checked against every waiting call a worker reports, not only the one
    # `AwaitingTool` names: a run waits on several calls at once.
    # Any workflow that shows `AgentStatus`: agent runs, and hosts of an embedded loop or
    # a tool runtime (their handlers carry a prefix, `handler_prefixes`).
    query = visibility_query(
        f"ExecutionStatus = 'Running' AND {status_in(WAITING_STATUSES)}",
        filters,
        tool_attribute=False,
    )
    tools = await tools_for(args)
    gate = asyncio.Semaphore(PENDING_QUERIES_AT_ONCE)
    polls: dict[str, _Polled] = {}
    prefixes: dict[str, str] = {}
    same_person = _identity_check(tools.client, filters)

    async def poll(execution: WorkflowExecution) -> _Polled:
        async with gate:
            polled: _Polled = None
            for prefix in await handler_prefixes(tools.client, execution):
                try:
                    polled = await status_quietly(
                        tools.run(execution.id, prefix=prefix), 3.0, task_queue=execution.task_queue
                    )
                except PayloadsEncrypted:
                    return "encrypted"  # one run this machine cannot read: say so, list the rest
                prefixes[execution.id] = prefix
                if isinstance(polled, RunSnapshot) and waits_on(polled):
                    break  # a host with several: the first whose calls wait
            return polled

    async def keep(execution: WorkflowExecution) -> bool | None:
        if same_person is not None:
            matches = await same_person(execution)
            if not matches:
                return matches
        polled = polls[execution.id] = await poll(execution)
        if filters.tool is None:
            return True
        if isinstance(polled, RunSnapshot):
            polled = polls[execution.id] = _only_tool(polled, filters.tool)
            return waits_on(polled)
        # No worker answers: the server's `AwaitingTool` is all there is to go by.
        return execution.typed_search_attributes.get(sa.AWAITING_TOOL) == filters.tool

    async with translate_rpc_errors():
        scan = await scan_runs(tools.client, query, args.limit, keep)
    summaries = [RunSummary.of(execution) for execution in scan.runs]
    polled_runs = [polls[s.run_id] for s in summaries]
    _scan_notes(scan, "waiting runs")
    cut = scan.more
    if cut:
        echo(
            f"showing the first {args.limit} runs waiting on a person; more are waiting "
            "(--limit N to list more)",
            err=True,
        )
    if args.json:
        entries = []
        for summary, polled in zip(summaries, polled_runs, strict=True):
            entry = summary.model_dump(mode="json")
            if prefixes.get(summary.run_id):
                entry["prefix"] = prefixes[summary.run_id]
            if polled == "encrypted":
                entry["encrypted"] = True
            elif polled is not None:
                entry["approvals"] = [a.model_dump(mode="json") for a in polled.pending_approvals]
                entry["authorizations"] = [
                    a.model_dump(mode="json") for a in polled.pending_authorizations
                ]
                entry["inputs"] = [i.model_dump(mode="json") for i in polled.pending_inputs]
                entry["callbacks"] = [c.model_dump(mode="json") for c in polled.pending_callbacks]
                entry["subagent_approvals"] = [
                    w.model_dump(mode="json") for w in polled.subagent_approvals
                ]
            entries.append(entry)
        dump_json(entries)
        return 0
    if not summaries:
        echo("nothing is waiting on anyone")
        return 0
    for summary, polled in zip(summaries, polled_runs, strict=True):
        prefix = prefixes.get(summary.run_id, "")
        under = (
            f"  (handlers under --prefix {terminal_safe(shlex.quote(prefix))})" if prefix else ""
        )
        echo(f"{summary.run_id}  agent {summary.agent or '?'}  {summary.status}{under}")
        if polled is None:
            echo("  (no worker answers: start one to see the pending calls)")
            continue
        if polled == "encrypted":
            echo(f"  (encrypted: {ENCRYPTED_NOTE})")
            continue
        for approval in polled.pending_approvals:
            rendered = render_approval(summary.run_id, approval, prefix=prefix)
            echo("  " + rendered.replace("\n", "\n  "))
        for wait in polled.subagent_approvals:
            rendered = render_subagent_wait(summary.run_id, wait, prefix=prefix)
            echo("  " + rendered.replace("\n", "\n  "))
        for authorization in polled.pending_authorizations:
            echo("  " + render_authorization(authorization, summary.run_id).replace("\n", "\n  "))
        for question in polled.pending_inputs:
            echo("  " + render_pending_input(summary.run_id, question).replace("\n", "\n  "))
        if polled.status is RunStatus.AWAITING_MESSAGE:
            echo(
                "  a session waiting for the next message: durable-tools send "
                f'{terminal_safe(shlex.quote(summary.run_id))} "..." (or close it: '
                f"durable-tools close {terminal_safe(shlex.quote(summary.run_id))})"
            )
        for published in polled.pending_callbacks:
            echo(
                f"  call {terminal_safe(published.call_id)} ({terminal_safe(published.tool)}) "
                f"waits for a client: durable-tools callbacks serve --tools MODULE "
                f"{terminal_safe(shlex.quote(summary.run_id))}"
            )
    return 0


# --------------------------------------------------------------------------- tools
