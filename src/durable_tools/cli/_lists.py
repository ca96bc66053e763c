"""Listing runs: `durable-tools runs` and `durable-tools pending`."""

from __future__ import annotations

import argparse
import asyncio
from typing import Literal

from durable_tools._input_client import render_pending_input
from durable_tools._render import (
    render_approval,
    render_authorization,
    render_table,
    terminal_safe,
)
from durable_tools._run_watch import ENCRYPTED_NOTE, PayloadsEncrypted, status_quietly
from durable_tools.client import RunSummary
from durable_tools.workflows import (
    RunSnapshot,
)

from ._commands import tools_for
from ._errors import CliError, translate_rpc_errors
from ._output import dump_json, echo

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


async def cmd_runs(args: argparse.Namespace) -> int:
    """Recent runs, newest first."""
    tools = await tools_for(args)
    async with translate_rpc_errors():
        try:
            summaries = await tools.runs(status=args.status, limit=args.limit)
        except ValueError as error:
            raise CliError(str(error)) from None
    if args.json:
        dump_json([s.model_dump(mode="json") for s in summaries])
    elif summaries:
        echo(_summary_rows(summaries))
    else:
        echo("no runs" + (f" with status {args.status}" if args.status else ""))
    return 0


PENDING_QUERIES_AT_ONCE = 16
"""Runs `durable-tools pending` queries at once (each asks a worker for the run's calls)."""


async def cmd_pending(args: argparse.Namespace) -> int:
    """Every run waiting on someone (a person's approval, authorization or answer, a
    callback client), with its waiting calls when a worker answers."""
    tools = await tools_for(args)
    async with translate_rpc_errors():
        # One more than shown: whether the list was cut is said, never silently dropped.
        summaries = await tools.pending(limit=args.limit + 1)
    cut = len(summaries) > args.limit
    summaries = summaries[: args.limit]
    gate = asyncio.Semaphore(PENDING_QUERIES_AT_ONCE)

    async def poll(run_id: str) -> RunSnapshot | Literal["encrypted"] | None:
        async with gate:
            try:
                return await status_quietly(tools.run(run_id), 3.0)
            except PayloadsEncrypted:
                return "encrypted"  # one run this machine cannot read: say so, list the rest

    polls = await asyncio.gather(*(poll(s.run_id) for s in summaries))
    if cut:
        echo(
            f"showing the first {args.limit} runs waiting on a person; more are waiting "
            "(--limit N to list more)",
            err=True,
        )
    if args.json:
        entries = []
        for summary, polled in zip(summaries, polls, strict=True):
            entry = summary.model_dump(mode="json")
            if polled == "encrypted":
                entry["encrypted"] = True
            elif polled is not None:
                entry["approvals"] = [a.model_dump(mode="json") for a in polled.pending_approvals]
                entry["authorizations"] = [
                    a.model_dump(mode="json") for a in polled.pending_authorizations
                ]
                entry["inputs"] = [i.model_dump(mode="json") for i in polled.pending_inputs]
                entry["callbacks"] = [c.model_dump(mode="json") for c in polled.pending_callbacks]
            entries.append(entry)
        dump_json(entries)
        return 0
    if not summaries:
        echo("nothing is waiting on anyone")
        return 0
    for summary, polled in zip(summaries, polls, strict=True):
        echo(f"{summary.run_id}  agent {summary.agent or '?'}  {summary.status}")
        if polled is None:
            echo("  (no worker answers: start one to see the pending calls)")
            continue
        if polled == "encrypted":
            echo(f"  (encrypted: {ENCRYPTED_NOTE})")
            continue
        for approval in polled.pending_approvals:
            echo("  " + render_approval(summary.run_id, approval).replace("\n", "\n  "))
        for authorization in polled.pending_authorizations:
            echo("  " + render_authorization(authorization, summary.run_id).replace("\n", "\n  "))
        for question in polled.pending_inputs:
            echo("  " + render_pending_input(summary.run_id, question).replace("\n", "\n  "))
        for published in polled.pending_callbacks:
            echo(
                f"  call {terminal_safe(published.call_id)} ({terminal_safe(published.tool)}) "
                f"waits for a client: durable-tools callbacks serve --tools MODULE "
                f"{terminal_safe(summary.run_id)}"
            )
    return 0


# --------------------------------------------------------------------------- tools
