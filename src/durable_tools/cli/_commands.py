"""Commands that read runs: show and tools, and the helpers every command shares (the
agent flags' config, describing a run, the "no worker" hint)."""

from __future__ import annotations

import argparse
import asyncio
import traceback
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from temporalio.client import (
    WorkflowExecutionDescription,
    WorkflowFailureError,
    WorkflowQueryFailedError,
)
from temporalio.common import SearchAttributeKey
from temporalio.service import RPCError, RPCStatusCode

from durable_tools import search_attributes as sa
from durable_tools._extras import missing_extra_in
from durable_tools.client import AgentRun, DurableTools
from durable_tools.client.inputs._answer import render_pending_input
from durable_tools.client.render._text import (
    render_approval,
    render_snapshot,
    running_calls,
    terminal_safe,
)
from durable_tools.client.render._tools import render_tool, tool_json
from durable_tools.client.runs._watch import (
    ENCRYPTED_NOTE,
    PayloadsEncrypted,
    is_encrypted_payload_error,
)
from durable_tools.client.start._options import check_model_spec
from durable_tools.tools._catalog import filter_specs
from durable_tools.tools._registry import ToolRegistry
from durable_tools.worker import load_registry, secrets_from_env
from durable_tools.workflows import (
    AgentConfig,
    CompactionConfig,
    ExecutionStrategy,
    Limits,
    PendingApproval,
    SessionConfig,
    ToolCallRecord,
)

from ._agent_flags import validation_problems
from ._errors import CliError, connect_or_explain, translate_rpc_errors
from ._output import dump_json, echo
from ._policy_flags import approval_policy
from ._project import project_from_args, project_registry
from ._tools_refresh import compare_reads, default_state_path, read_digests, save_read
from ._ui import run_link
from ._watch import QUERY_TIMEOUT, query_quietly, render_progress

__all__ = [
    "agent_config",
    "cmd_show",
    "cmd_tools",
    "describe_open_run",
    "describe_run",
    "load_tools",
    "no_worker",
    "preload_tools",
    "run_of",
    "status_name",
    "tools_for",
]


def load_tools(target: str) -> ToolRegistry:
    """`load_registry`, with its errors as user errors."""
    try:
        return load_registry(target)
    except ValueError as error:
        raise CliError(str(error)) from None
    except Exception as error:  # the user's module failed while it ran: show where
        if (missing := missing_extra_in(error)) is not None:  # the one line says it all
            raise CliError(f"loading tools module {target!r} failed: {missing}") from None
        trace = "".join(traceback.format_exception(error)).rstrip()
        raise CliError(
            f"loading tools module {target!r} failed: {type(error).__name__}: {error}\n{trace}"
        ) from None


def preload_tools(args: argparse.Namespace) -> None:
    """Import the `--tools` module before the command's event loop starts.

    A tools module may do blocking start-up work such as `attach_mcp_sync`, which runs its
    own event loop and so cannot run inside the command's. The registry is kept on `args`.
    """
    target = getattr(args, "tools", None)
    if not target and getattr(args, "project_tools", False):  # the file's module (worker)
        project = project_from_args(args)
        target = project.tools if project is not None else None
    if target:
        args.registry = load_tools(target)


def _registry(args: argparse.Namespace) -> ToolRegistry:
    registry = getattr(args, "registry", None)
    return registry if isinstance(registry, ToolRegistry) else load_tools(args.tools)


def run_of(tools: DurableTools, args: argparse.Namespace) -> AgentRun:
    """The handle on RUN_ID (an embedded loop's with `--prefix`)."""
    try:
        return tools.run(args.run_id, prefix=getattr(args, "prefix", ""))
    except ValueError as error:  # a prefix no loop can have
        raise CliError(f"--prefix: {terminal_safe(str(error))}", 2) from None


async def tools_for(args: argparse.Namespace) -> DurableTools:
    client = await connect_or_explain(flags=args)
    return DurableTools(client, getattr(args, "task_queue", None))


# ----------------------------------------------------------------------------- run


def agent_config(args: argparse.Namespace, *, session: bool = False) -> AgentConfig:
    """The run's `AgentConfig` from the agent flags of `run`, `send` or `schedule create`.

    Args:
        args: The parsed flags (`_agent_flags.add_agent_flags`).
        session: Make the run a session (`run --session`, `send --model`), waiting
            `--idle-timeout` seconds for each next message (default a week).
    """
    names = None
    if args.tools:  # first: the module may register a model adapter of its own
        names = [spec.name for spec in _registry(args).specs()]
    compaction: CompactionConfig | None = args.compaction
    summarizer = [compaction.summarizer_model] if compaction and compaction.summarizer_model else []
    # Before connecting: a spec no worker could resolve never becomes a run.
    for where, specs in (
        ("", [args.model, *args.fallback_model]),
        ("--compaction summarizer_model: ", summarizer),
    ):
        try:
            for spec in specs:
                check_model_spec(spec)
        except ValueError as error:
            raise CliError(where + str(error)) from None
    idle = getattr(args, "idle_timeout", None)
    sessions = SessionConfig(idle_timeout_seconds=idle) if idle is not None else SessionConfig()
    strategy: dict[str, Any] = {}
    if args.strategy:
        strategy["mode"] = args.strategy
    if args.concurrency:
        strategy["concurrency"] = args.concurrency
        strategy["batch_size"] = args.concurrency
    try:
        return AgentConfig(
            name=args.name or "agent",
            model=args.model,
            fallback_models=args.fallback_model,
            instructions=args.instructions,
            tools=names,
            strategy=ExecutionStrategy(**strategy),
            limits=_limits(args),
            approval=approval_policy(args),
            versioning=args.versioning,
            code_mode=args.code_mode,
            compaction=compaction,
            session=sessions if session else None,
        )
    except ValidationError as error:
        raise CliError(f"invalid agent configuration: {validation_problems(error)}") from None


def _limits(args: argparse.Namespace) -> Limits:
    """The run's limits: the project file's (`--project`), with `--max-turns` on top."""
    project = getattr(args, "project_file", None)
    base = project.limits if project is not None and project.limits is not None else Limits()
    return base.model_copy(update={"max_turns": args.max_turns}) if args.max_turns else base


# ---------------------------------------------------------------------------- show


def _attributes(description: WorkflowExecutionDescription) -> dict[str, Any]:
    keys: list[SearchAttributeKey[Any]] = list(sa.SEARCH_ATTRIBUTES)
    found = {key.name: description.typed_search_attributes.get(key) for key in keys}
    return {name: value for name, value in found.items() if value is not None}


async def describe_run(run: AgentRun, missing: str | None = None) -> WorkflowExecutionDescription:
    """The run's description from the server.

    Raises:
        CliError: no run has that id (`missing` says what to do then, if given), or no
            server answers.
    """
    async with translate_rpc_errors(run.run_id):
        try:
            return await run.handle.describe()
        except RPCError as error:
            if missing is None or error.status != RPCStatusCode.NOT_FOUND:
                raise
            raise CliError(missing) from None


async def describe_open_run(
    run: AgentRun, nothing: str = "nothing waits", *, missing: str | None = None
) -> WorkflowExecutionDescription:
    """`describe_run`, for a command that needs the run still open.

    Raises:
        CliError: the run has ended (`nothing` says what that leaves to do), or as
            `describe_run` (`missing`).
    """
    description = await describe_run(run, missing)
    if description.close_time is not None:
        raise CliError(f"run {run.run_id} has ended ({status_name(description)}): {nothing}")
    return description


async def cmd_show(args: argparse.Namespace) -> int:
    """A run's status, approvals, timeline and answer; the server's view without a worker."""
    tools = await tools_for(args)
    run = run_of(tools, args)
    description = await describe_run(run)
    try:
        polled = await query_quietly(run, task_queue=description.task_queue)
    except PayloadsEncrypted:
        return await _show_from_server(run, description, args.json, encrypted=True)
    if polled is not None:
        snapshot, timeline = polled
        timeline = await _with_decisions(run, timeline)
        in_children = await _subagent_approvals(run, timeline)
        progress = await run.progress(description)
        if args.json:
            dump_json(
                {
                    "run_id": run.run_id,
                    "ui_url": run_link(run),
                    "source": "worker",
                    "execution_status": status_name(description),
                    **snapshot.model_dump(mode="json"),
                    # The workflow's `running_tools` keeps a call listed until its whole
                    # group ends; the timeline says which calls run now.
                    "running_tools": running_calls(timeline),
                    "timeline": [r.model_dump(mode="json") for r in timeline],
                    "progress": [
                        {
                            "call_id": p.call_id,
                            "tool": p.tool,
                            **p.progress.model_dump(mode="json"),
                            **({"run_id": p.run_id} if p.run_id else {}),
                        }
                        for p in progress
                    ],
                    "subagent_approvals": [
                        {"run_id": run_id, **approval.model_dump(mode="json")}
                        for run_id, approval in in_children
                    ],
                }
            )
        else:
            # What a sub-agent that answered shows itself below, in full; what the run was
            # told of the others (their worker did not answer) is said by the run.
            live = {(run_id, approval.call_id) for run_id, approval in in_children}
            told = [w for w in snapshot.subagent_approvals if (w.run_id, w.call_id) not in live]
            snapshot = snapshot.model_copy(update={"subagent_approvals": told})
            echo(render_snapshot(run.run_id, snapshot, timeline, run_link(run)))
            for waiting in snapshot.pending_inputs:  # MCP servers' questions for the user
                echo("\n" + render_pending_input(run.run_id, waiting))
            for item in progress:
                where = f"  (sub-agent run {terminal_safe(item.run_id)})" if item.run_id else ""
                echo(
                    f"  progress {item.call_id} {item.tool}: {render_progress(item.progress)}"
                    + where
                )
            for run_id, approval in in_children:
                echo(f"\nin sub-agent run {run_id}:\n{render_approval(run_id, approval)}")
        return 0
    return await _show_from_server(run, description, args.json)


async def _with_decisions(run: AgentRun, timeline: list[ToolCallRecord]) -> list[ToolCallRecord]:
    """The timeline with deciders filled in (as it is when the events query fails)."""
    try:
        return await asyncio.wait_for(run.decided_timeline(timeline), QUERY_TIMEOUT)
    except (WorkflowQueryFailedError, RPCError, TimeoutError):
        return timeline


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


def no_worker(task_queue: str, what: str) -> str:
    return (
        f"no worker {what}: start one for task queue {task_queue} "
        "(`durable-tools worker --tools MODULE --task-queue ...`)"
    )


def status_name(description: WorkflowExecutionDescription) -> str:
    return description.status.name if description.status is not None else "UNKNOWN"


async def _show_from_server(
    run: AgentRun,
    description: WorkflowExecutionDescription,
    as_json: bool,
    *,
    encrypted: bool = False,
) -> int:
    execution = status_name(description)
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
        except KeyError as error:
            if not is_encrypted_payload_error(error):
                raise
            encrypted = True
    note = (
        f"only what the server shows in plain: {ENCRYPTED_NOTE}"
        if encrypted
        else no_worker(description.task_queue, "answered the status query") + " for the full view"
    )
    if as_json:
        dump_json(
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
    echo(f"run {run.run_id}  execution {execution}  task queue {description.task_queue}")
    for name, value in attributes.items():
        echo(f"  {name}: {value}")
    echo(f"UI: {run_link(run)}")
    if result is not None:
        echo(
            f"status: {result['status']}  turns {result['turns']}  "
            f"tool calls {result['tool_calls']}"
        )
        if result.get("reason"):
            echo(f"reason: {terminal_safe(result['reason'])}")
        if result.get("final_answer") is not None:
            echo("final answer:")
            echo(result["final_answer"])
    if failure:
        echo(f"failure: {terminal_safe(failure)}")
    echo(f"\nnote: {note}")
    return 0


# ------------------------------------------------------------------- runs, pending


def _refresh_report(args: argparse.Namespace, registry: ToolRegistry) -> int:
    """`tools refresh`: say what this read changed against the last one, and keep it."""
    project_path = getattr(args, "project_file_path", None)
    if project_path is None and not args.state:
        raise CliError("tools refresh needs --project FILE (or --state FILE)", 2)
    state = Path(args.state) if args.state else default_state_path(str(project_path))
    now = read_digests(registry)
    read = compare_reads(state, now)
    save_read(state, now)
    if args.json:
        dump_json(
            {
                "added": read.added,
                "changed": read.changed,
                "removed": read.removed,
                "first_read": read.first,
            }
        )
        return 0
    if read.first:
        echo(f"first read: {len(now)} tools (kept in {state}; the next refresh compares)")
    lines = [f"added {name}" for name in read.added if not read.first]
    lines += [f"changed {name}" for name in read.changed]
    lines += [f"removed {name}" for name in read.removed]
    if not read.first:
        echo("\n".join(lines) or "no changes since the last read")
    echo(
        "running workers pick changes up on their own: an OpenAPI document by its "
        "refresh_seconds, an MCP server when it announces them; others at their restart"
    )
    return 0


async def cmd_tools(args: argparse.Namespace) -> int:
    """Print a registry's model-visible schemas and safety rules: `--tools`'s, or a
    project file's (its module's and its sources', as its workers serve them)."""
    project = project_from_args(args)
    if project is None and not args.tools:
        raise CliError("no tools: give --tools MODULE[:ATTR] or --project FILE", 2)
    registry = getattr(args, "registry", None) or (load_tools(args.tools) if args.tools else None)
    if project is not None:
        registry = await project_registry(project, registry, secrets_from_env())
    assert registry is not None
    if getattr(args, "action", None) == "refresh":
        return _refresh_report(args, registry)
    every = registry.specs()
    specs = filter_specs(
        every,
        granted_scopes={scope for spec in every for scope in spec.auth_scopes},  # list them all
        transport=args.transport,
        source=args.source,
        mime_type=args.mime_type,
        tag=args.tag,
    )
    if args.json:
        dump_json([tool_json(spec) for spec in specs])
    else:
        echo("\n\n".join(render_tool(spec) for spec in specs) or "no tools")
    return 0
