"""Commands that act on a run: approve, deny, steer, cancel."""

from __future__ import annotations

import argparse
import asyncio
import getpass
from pathlib import Path

from pydantic import ValidationError
from temporalio.client import (
    WorkflowQueryFailedError,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)

from durable_tools._render import render_decision, terminal_safe
from durable_tools._run_watch import has_workers
from durable_tools.client import AgentRun
from durable_tools.workflows import ApprovalDecision, PendingApproval

from ._commands import describe_open_run, no_worker, run_of, tools_for
from ._confirm import (
    DECLINED_EXIT_CODE,
    confirm,
    describe_request,
    hash_given,
    require_hash_or_terminal,
    stale_request,
)
from ._errors import CliError, translate_rpc_errors
from ._groups import decider_for
from ._inbox_client import decide_via_inbox
from ._output import echo

__all__ = ["DECIDE_TIMEOUT", "cmd_cancel", "cmd_decide", "cmd_steer"]

DECIDE_TIMEOUT = 30.0
"""Seconds an approval or denial may wait for a worker to take it."""


def _tokens_file(args: argparse.Namespace) -> Path | None:
    given = getattr(args, "tokens_file", None)
    return Path(given) if given else None


def _who() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "anonymous"


async def _request_named(
    run: AgentRun, call_id: str, digest: str | None
) -> tuple[AgentRun, PendingApproval]:
    """The one request pending for `call_id` in `run` or its running sub-agents that the
    decision names (by `digest` when given), with the run that waits for it.

    Raises:
        CliError: nothing pending under `call_id`, a `digest` that names none of it (a
            stale request), or several requests that `digest` does not tell apart.
    """
    waiting = [(run_id, a) for run_id, a in await run.pending_approvals() if a.call_id == call_id]
    if not waiting:
        decided = await _how_decided(run, call_id)
        if decided:
            raise CliError(
                f"call {terminal_safe(call_id)} of run {run.run_id} was already {decided}; "
                "nothing is pending under it"
            )
        raise CliError(
            f"no approval is pending for call {terminal_safe(call_id)} "
            f"in run {run.run_id} (see `durable-tools pending`)"
        )
    if digest is not None:
        waiting = [(run_id, a) for run_id, a in waiting if a.arguments_hash == digest]
        if not waiting:
            raise stale_request(run.run_id, call_id)
    if len(waiting) > 1:
        runs = ", ".join(run_id for run_id, _ in waiting)
        raise CliError(
            f"several requests are pending for call {terminal_safe(call_id)} (in runs "
            f"{terminal_safe(runs)}): decide it in the run that waits for it, with --hash"
        )
    run_id, approval = waiting[0]
    return (run if run_id == run.run_id else AgentRun(run.client, run_id)), approval


async def _how_decided(run: AgentRun, call_id: str) -> str:
    """`approved by alice at ...` for the latest decided call `call_id` of `run` (empty if
    none): a second decider learns who was first, and when."""
    decided = [r for r in await run.decided_timeline() if r.call_id == call_id and r.decided_by]
    return render_decision(decided[-1]) if decided else ""


async def cmd_decide(args: argparse.Namespace) -> int:
    """Approve or deny the pending request the person saw; a refusal exits with 2.

    The decision names a request, not just a call id (a model may reuse an id with other
    arguments): by `--hash`, or, without it, by showing the request at a terminal and
    asking for a yes. Without `--hash` and without a terminal nothing is decided. Either
    way the decision carries the hash of the request named, so the run refuses it if the
    call pending under that id changes before it lands.
    """
    verb = "approve" if args.approve else "deny"
    digest = hash_given(args.arguments_hash)
    require_hash_or_terminal(verb, digest)
    if getattr(args, "inbox", None):
        return await decide_via_inbox(args, digest)
    tools = await tools_for(args)
    run = run_of(tools, args)
    description = await describe_open_run(run, "no decision")
    if not await has_workers(tools.client, description.task_queue):
        raise CliError(no_worker(description.task_queue, "to take the decision"))
    try:
        async with translate_rpc_errors(run.run_id):
            target, approval = await asyncio.wait_for(
                _request_named(run, args.call_id, digest), DECIDE_TIMEOUT
            )
            where = "" if target is run else f" (in sub-agent run {target.run_id})"
            echo(f"to {verb}{where}:\n{describe_request(target.run_id, approval)}", flush=True)
            if digest is None and not confirm(verb):
                raise CliError(
                    f"nothing decided: call {terminal_safe(args.call_id)} of run "
                    f"{target.run_id} still waits",
                    exit_code=DECLINED_EXIT_CODE,
                )
            verdict = await asyncio.wait_for(
                target.send_decision(
                    ApprovalDecision(
                        call_id=args.call_id,
                        approve=args.approve,
                        decider=decider_for(
                            args.decider or _who(), approval.deciders, _tokens_file(args)
                        ),
                        reason=args.reason,
                        arguments_hash=approval.arguments_hash,
                    )
                ),
                DECIDE_TIMEOUT,
            )
    except WorkflowUpdateFailedError as error:
        cause = error.cause
        message = getattr(cause, "message", None) or str(cause or error)
        raise CliError(f"rejected by run {run.run_id}: {terminal_safe(message)}") from None
    except WorkflowQueryFailedError as error:
        raise CliError(f"run {run.run_id} did not say what is pending: {error}") from None
    except (TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError):
        raise CliError(
            no_worker(description.task_queue, f"took the decision within {DECIDE_TIMEOUT:.0f} s")
        ) from None
    echo(f"{verdict}: call {terminal_safe(args.call_id)} of run {run.run_id}")
    return 0


async def cmd_steer(args: argparse.Namespace) -> int:
    """Signal a new instruction."""
    tools = await tools_for(args)
    run = run_of(tools, args)
    try:
        async with translate_rpc_errors(run.run_id):
            await run.steer(args.text, skip_remaining=args.skip_remaining)
    except ValidationError as error:  # empty or too long: checked before sending
        problem = error.errors(include_url=False, include_input=False)[0]["msg"]
        raise CliError(f"not sent to run {run.run_id}: {problem}") from None
    skipping = "; the turn's calls not started yet are skipped" if args.skip_remaining else ""
    echo(f"sent to run {run.run_id}{skipping}: the model reads it before its next turn")
    return 0


async def cmd_cancel(args: argparse.Namespace) -> int:
    """Signal a clean cancellation."""
    tools = await tools_for(args)
    run = run_of(tools, args)
    async with translate_rpc_errors(run.run_id):
        await run.cancel(args.reason)
    echo(f"cancellation requested for run {run.run_id}")
    return 0
