"""Commands that talk to runs: run, show, runs, pending, approve/deny, steer, cancel, tools."""

from __future__ import annotations

import argparse
import asyncio
import getpass
import json
import os
import sys
from datetime import datetime
from typing import Any

from pydantic import ValidationError
from temporalio.client import (
    WorkflowExecutionDescription,
    WorkflowFailureError,
    WorkflowQueryFailedError,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.common import SearchAttributeKey
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError

from durable_tools import search_attributes as sa
from durable_tools._render import (
    render_approval,
    render_authorization,
    render_snapshot,
    render_table,
    render_tool,
    tool_json,
)
from durable_tools.client import AgentRun, DurableTools, RunSummary
from durable_tools.connection import resolve_address
from durable_tools.server import ui_url
from durable_tools.tools._context import Identity
from durable_tools.tools._registry import ToolRegistry
from durable_tools.worker import load_registry
from durable_tools.workflows import (
    AgentConfig,
    ExecutionStrategy,
    Limits,
    PendingApproval,
    ToolCallRecord,
)

from ._errors import CliError, connect_or_explain, translate_rpc_errors
from ._watch import QUERY_TIMEOUT, RunWatcher, has_workers, query_quietly

__all__ = [
    "cmd_cancel",
    "cmd_decide",
    "cmd_pending",
    "cmd_run",
    "cmd_runs",
    "cmd_show",
    "cmd_steer",
    "cmd_tools",
]

DECIDE_TIMEOUT = 30.0
"""Seconds an approval or denial may wait for a worker to take it."""


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def _dump(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False, default=_json_default))


def _who() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "anonymous"


def run_link(run: AgentRun) -> str:
    """The run's page in the Web UI: `TEMPORAL_UI_URL` if set; for a server on loopback,
    the embedded server's UI port (frontend port + 1000); else the default."""
    if not os.environ.get("TEMPORAL_UI_URL"):
        host, _, port = resolve_address().rpartition(":")
        if host in ("127.0.0.1", "localhost") and port.isdigit():
            base = f"http://{host}:{int(port) + 1000}"
            return ui_url(run.client.namespace, run.run_id, base=base)
    return run.ui_url


def load_tools(target: str) -> ToolRegistry:
    """`load_registry`, with its errors as user errors."""
    try:
        return load_registry(target)
    except ValueError as error:
        raise CliError(str(error)) from None


async def _tools(args: argparse.Namespace) -> DurableTools:
    client = await connect_or_explain()
    return DurableTools(client, getattr(args, "task_queue", None))


# ----------------------------------------------------------------------------- run


def _config(args: argparse.Namespace) -> AgentConfig:
    names = None
    if args.tools:
        names = [spec.name for spec in load_tools(args.tools).specs()]
    strategy: dict[str, Any] = {}
    if args.strategy:
        strategy["mode"] = args.strategy
    if args.concurrency:
        strategy["concurrency"] = args.concurrency
        strategy["batch_size"] = args.concurrency
    try:
        return AgentConfig(
            name=args.name,
            model=args.model,
            instructions=args.instructions,
            tools=names,
            strategy=ExecutionStrategy(**strategy),
            limits=Limits(max_turns=args.max_turns) if args.max_turns else Limits(),
        )
    except ValidationError as error:
        raise CliError(f"invalid agent configuration: {error}") from None


async def cmd_run(args: argparse.Namespace) -> int:
    """Start a run; with `--wait`, follow it to its end."""
    config = _config(args)
    tools = await _tools(args)
    try:
        async with translate_rpc_errors():
            run = await tools.start(
                args.prompt,
                config=config,
                run_id=args.run_id,
                identity=Identity(user=args.user, tenant=args.tenant),
                granted_scopes=args.scope,
            )
    except WorkflowAlreadyStartedError:
        raise CliError(f"a run with id {args.run_id!r} already exists") from None
    if not args.wait:
        if args.json:
            _dump({"run_id": run.run_id, "ui_url": run_link(run), "task_queue": tools.task_queue})
        else:
            print(f"started run {run.run_id} on task queue {tools.task_queue}")
            print(f"UI: {run_link(run)}")
            print(f"follow it: durable-tools show {run.run_id}")
        return 0

    # With --json, progress goes to stderr so stdout stays one JSON document.
    def progress(line: str) -> None:
        print(line, file=sys.stderr if args.json else sys.stdout, flush=True)

    progress(f"started run {run.run_id}")
    progress(f"UI: {run_link(run)}")
    try:
        outcome = await RunWatcher(run, out=progress, task_queue=tools.task_queue).watch()
    except (KeyboardInterrupt, asyncio.CancelledError):
        print(
            f"\nstopped following; the run goes on: durable-tools show {run.run_id}",
            file=sys.stderr,
        )
        raise
    if args.json:
        _dump(outcome.to_json(run_link(run)))
    else:
        if outcome.reason:
            print(f"reason: {outcome.reason}")
        if outcome.final_answer is not None:
            print("final answer:")
            print(outcome.final_answer)
    return 0 if outcome.ok else 1


# ---------------------------------------------------------------------------- show


def _attributes(description: WorkflowExecutionDescription) -> dict[str, Any]:
    keys: list[SearchAttributeKey[Any]] = list(sa.SEARCH_ATTRIBUTES)
    found = {key.name: description.typed_search_attributes.get(key) for key in keys}
    return {name: value for name, value in found.items() if value is not None}


async def _describe(run: AgentRun) -> WorkflowExecutionDescription:
    async with translate_rpc_errors(run.run_id):
        return await run.handle.describe()


async def cmd_show(args: argparse.Namespace) -> int:
    """A run's status, approvals, timeline and answer; the server's view without a worker."""
    tools = await _tools(args)
    run = tools.run(args.run_id)
    description = await _describe(run)
    polled = await query_quietly(run, task_queue=description.task_queue)
    if polled is not None:
        snapshot, timeline = polled
        in_children = await _subagent_approvals(run, timeline)
        if args.json:
            _dump(
                {
                    "run_id": run.run_id,
                    "ui_url": run_link(run),
                    "source": "worker",
                    "execution_status": _status_name(description),
                    **snapshot.model_dump(mode="json"),
                    "timeline": [r.model_dump(mode="json") for r in timeline],
                    "subagent_approvals": [
                        {"run_id": run_id, **approval.model_dump(mode="json")}
                        for run_id, approval in in_children
                    ],
                }
            )
        else:
            print(render_snapshot(run.run_id, snapshot, timeline, run_link(run)))
            for run_id, approval in in_children:
                print(f"\nin sub-agent run {run_id}:\n{render_approval(run_id, approval)}")
        return 0
    return await _show_from_server(run, description, args.json)


async def _subagent_approvals(
    run: AgentRun, timeline: list[ToolCallRecord]
) -> list[tuple[str, PendingApproval]]:
    """Approvals that running sub-agents of `run` wait for (empty if none answer in time)."""
    if not any(r.child_run_id and r.status == "running" for r in timeline):
        return []
    try:
        return await asyncio.wait_for(run.subagent_approvals(timeline), QUERY_TIMEOUT)
    except (WorkflowQueryFailedError, RPCError, TimeoutError):
        return []


def _no_worker(task_queue: str, what: str) -> str:
    return (
        f"no worker {what}: start one for task queue {task_queue} "
        "(`durable-tools worker --tools MODULE --task-queue ...`)"
    )


def _status_name(description: WorkflowExecutionDescription) -> str:
    return description.status.name if description.status is not None else "UNKNOWN"


async def _show_from_server(
    run: AgentRun, description: WorkflowExecutionDescription, as_json: bool
) -> int:
    execution = _status_name(description)
    attributes = _attributes(description)
    result: dict[str, Any] | None = None
    failure: str | None = None
    if description.close_time is not None:
        try:
            ended = await asyncio.wait_for(run.handle.result(), 10)
            result = ended.model_dump(mode="json")
        except WorkflowFailureError as error:
            failure = str(error.cause or error)
        except TimeoutError:
            failure = "the result could not be read in time"
    note = _no_worker(description.task_queue, "answered the status query") + " for the full view"
    if as_json:
        _dump(
            {
                "run_id": run.run_id,
                "ui_url": run_link(run),
                "source": "server",
                "execution_status": execution,
                "task_queue": description.task_queue,
                "search_attributes": attributes,
                "started_at": description.start_time,
                "closed_at": description.close_time,
                "result": result,
                "failure": failure,
                "note": note,
            }
        )
        return 0
    print(f"run {run.run_id}  execution {execution}  task queue {description.task_queue}")
    for name, value in attributes.items():
        print(f"  {name}: {value}")
    print(f"UI: {run_link(run)}")
    if result is not None:
        print(
            f"status: {result['status']}  turns {result['turns']}  "
            f"tool calls {result['tool_calls']}"
        )
        if result.get("reason"):
            print(f"reason: {result['reason']}")
        if result.get("final_answer") is not None:
            print("final answer:")
            print(result["final_answer"])
    if failure:
        print(f"failure: {failure}")
    print(f"\nnote: {note}")
    return 0


# ------------------------------------------------------------------- runs, pending


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
    tools = await _tools(args)
    async with translate_rpc_errors():
        try:
            summaries = await tools.runs(status=args.status, limit=args.limit)
        except ValueError as error:
            raise CliError(str(error)) from None
    if args.json:
        _dump([s.model_dump(mode="json") for s in summaries])
    elif summaries:
        print(_summary_rows(summaries))
    else:
        print("no runs" + (f" with status {args.status}" if args.status else ""))
    return 0


async def cmd_pending(args: argparse.Namespace) -> int:
    """Every run waiting on a person, with its pending calls when a worker answers."""
    tools = await _tools(args)
    async with translate_rpc_errors():
        summaries = await tools.pending()
    polls = await asyncio.gather(*(query_quietly(tools.run(s.run_id), 3.0) for s in summaries))
    if args.json:
        entries = []
        for summary, polled in zip(summaries, polls, strict=True):
            entry = summary.model_dump(mode="json")
            if polled is not None:
                entry["approvals"] = [
                    a.model_dump(mode="json") for a in polled[0].pending_approvals
                ]
                entry["authorizations"] = [
                    a.model_dump(mode="json") for a in polled[0].pending_authorizations
                ]
            entries.append(entry)
        _dump(entries)
        return 0
    if not summaries:
        print("nothing is waiting on anyone")
        return 0
    for summary, polled in zip(summaries, polls, strict=True):
        print(f"{summary.run_id}  agent {summary.agent or '?'}  {summary.status}")
        if polled is None:
            print("  (no worker answers: start one to see the pending calls)")
            continue
        for approval in polled[0].pending_approvals:
            print("  " + render_approval(summary.run_id, approval).replace("\n", "\n  "))
        for authorization in polled[0].pending_authorizations:
            print("  " + render_authorization(authorization).replace("\n", "\n  "))
    return 0


# --------------------------------------------------------- approve, deny, steer, cancel


async def cmd_decide(args: argparse.Namespace) -> int:
    """Approve or deny a pending call; a rejected decision exits with 2."""
    tools = await _tools(args)
    run = tools.run(args.run_id)
    description = await _describe(run)
    if description.close_time is not None:
        raise CliError(f"run {run.run_id} has ended ({_status_name(description)}): no decision")
    if not await has_workers(tools.client, description.task_queue):
        raise CliError(_no_worker(description.task_queue, "to take the decision"))
    try:
        async with translate_rpc_errors(run.run_id):
            verdict = await asyncio.wait_for(
                run.decide(
                    args.call_id,
                    approve=args.approve,
                    decider=args.decider or _who(),
                    reason=args.reason,
                    arguments_hash=args.arguments_hash,
                ),
                DECIDE_TIMEOUT,
            )
    except WorkflowUpdateFailedError as error:
        cause = error.cause
        message = getattr(cause, "message", None) or str(cause or error)
        raise CliError(f"rejected by run {run.run_id}: {message}") from None
    except (TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError):
        raise CliError(
            _no_worker(description.task_queue, f"took the decision within {DECIDE_TIMEOUT:.0f} s")
        ) from None
    print(f"{verdict}: call {args.call_id} of run {run.run_id}")
    return 0


async def cmd_steer(args: argparse.Namespace) -> int:
    """Signal a new instruction."""
    tools = await _tools(args)
    run = tools.run(args.run_id)
    async with translate_rpc_errors(run.run_id):
        await run.steer(args.text)
    print(f"sent to run {run.run_id}: the model reads it before its next turn")
    return 0


async def cmd_cancel(args: argparse.Namespace) -> int:
    """Signal a clean cancellation."""
    tools = await _tools(args)
    run = tools.run(args.run_id)
    async with translate_rpc_errors(run.run_id):
        await run.cancel(args.reason)
    print(f"cancellation requested for run {run.run_id}")
    return 0


# --------------------------------------------------------------------------- tools


async def cmd_tools(args: argparse.Namespace) -> int:
    """Print a registry's model-visible schemas and safety rules."""
    specs = load_tools(args.tools).specs()
    if args.json:
        _dump([tool_json(spec) for spec in specs])
    else:
        print("\n\n".join(render_tool(spec) for spec in specs) or "no tools")
    return 0
