"""Commands that act on a run: approve, deny, steer, cancel."""

from __future__ import annotations

import argparse
import asyncio
import getpass

from pydantic import ValidationError
from temporalio.client import (
    WorkflowQueryFailedError,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)

from durable_tools._render import render_approval, terminal_safe
from durable_tools.workflows import ApprovalDecision

from ._commands import describe_open_run, no_worker, tools_for
from ._errors import CliError, translate_rpc_errors
from ._inbox_client import decide_via_inbox
from ._output import echo
from ._watch import has_workers

__all__ = ["DECIDE_TIMEOUT", "cmd_cancel", "cmd_decide", "cmd_steer"]

DECIDE_TIMEOUT = 30.0
"""Seconds an approval or denial may wait for a worker to take it."""


def _who() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "anonymous"


async def cmd_decide(args: argparse.Namespace) -> int:
    """Approve or deny a pending call, bound to the request shown; a rejection exits with 2.

    The pending approval is fetched and printed (tool, redacted arguments, hash) and the
    decision carries that hash (or the one given with `--hash`): if the call pending under
    this id changes before the decision lands, the run rejects it instead of approving
    something nobody saw.
    """
    if getattr(args, "inbox", None):
        return await decide_via_inbox(args)
    tools = await tools_for(args)
    run = tools.run(args.run_id)
    description = await describe_open_run(run, "no decision")
    if not await has_workers(tools.client, description.task_queue):
        raise CliError(no_worker(description.task_queue, "to take the decision"))
    verb = "approve" if args.approve else "deny"
    try:
        async with translate_rpc_errors(run.run_id):
            found = await asyncio.wait_for(run.find_approval(args.call_id), DECIDE_TIMEOUT)
            if found is None:
                raise CliError(
                    f"no approval is pending for call {terminal_safe(args.call_id)} "
                    f"in run {run.run_id} (see `durable-tools pending`)"
                )
            target, approval = found
            where = "" if target is run else f" (in sub-agent run {target.run_id})"
            echo(f"to {verb}{where}:\n{render_approval(target.run_id, approval, commands=False)}")
            verdict = await asyncio.wait_for(
                target.send_decision(
                    ApprovalDecision(
                        call_id=args.call_id,
                        approve=args.approve,
                        decider=args.decider or _who(),
                        reason=args.reason,
                        arguments_hash=args.arguments_hash or approval.arguments_hash,
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
    run = tools.run(args.run_id)
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
    run = tools.run(args.run_id)
    async with translate_rpc_errors(run.run_id):
        await run.cancel(args.reason)
    echo(f"cancellation requested for run {run.run_id}")
    return 0
