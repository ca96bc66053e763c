"""Commands that act on a run: approve, deny, steer, cancel."""

from __future__ import annotations

import argparse
import getpass
from pathlib import Path

from pydantic import ValidationError
from temporalio.service import RPCError, RPCStatusCode

from durable_tools.client import AgentRun
from durable_tools.client.render._text import terminal_safe
from durable_tools.client.runs._decide import DecisionError, NotADecider

from ._commands import describe_run, run_of, status_name, tools_for
from ._confirm import (
    DECLINED_EXIT_CODE,
    can_ask,
    confirm,
    describe_request,
    hash_given,
    require_hash_or_terminal,
)
from ._errors import CliError, translate_rpc_errors
from ._groups import groups_for, not_a_member
from ._inbox_client import decide_via_inbox
from ._output import echo

__all__ = ["cmd_cancel", "cmd_decide", "cmd_steer"]


def _tokens_file(args: argparse.Namespace) -> Path | None:
    given = getattr(args, "tokens_file", None)
    return Path(given) if given else None


def _who() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "anonymous"


async def cmd_decide(args: argparse.Namespace) -> int:
    """Approve or deny the pending request the person saw; a refusal exits with 2.

    The decision names a request, not just a call id (a model may reuse an id with other
    arguments): by `--hash`, or, without it, by showing the request at a terminal and
    asking for a yes. Without `--hash` and without a terminal nothing is approved; a
    denial goes ahead on the one request pending under the call id, shown first. Either
    way the decision carries the hash of the request shown, so the run refuses it if the
    call pending under that id changes before it lands. Deciding is
    `AgentRun.decide_request`: this only shows, asks, and turns its errors into one line.
    """
    verb = "approve" if args.approve else "deny"
    digest = hash_given(args.arguments_hash)
    require_hash_or_terminal(verb, digest)
    if getattr(args, "inbox", None):
        return await decide_via_inbox(args, digest)
    run = run_of(await tools_for(args), args)
    person = args.decider or _who()
    try:
        async with translate_rpc_errors(run.run_id):
            found = await run.find_request(args.call_id, arguments_hash=digest)
            target, approval = found.run, found.approval
            where = "" if target.run_id == run.run_id else f" (in sub-agent run {target.run_id})"
            echo(f"to {verb}{where}:\n{describe_request(target.run_id, approval)}", flush=True)
            if digest is None and can_ask() and not confirm(verb):
                raise CliError(
                    f"nothing decided: call {terminal_safe(args.call_id)} of run "
                    f"{target.run_id} still waits",
                    exit_code=DECLINED_EXIT_CODE,
                )
            recorded = await target.decide_request(
                args.call_id,
                args.approve,
                arguments_hash=approval.arguments_hash,
                decider=person,
                groups=groups_for(person, approval.deciders, _tokens_file(args)),
                reason=args.reason,
            )
    except NotADecider as refused:
        hint = not_a_member(person, refused.deciders, _tokens_file(args))
        raise CliError(terminal_safe(refused.message + hint)) from None
    except DecisionError as refused:
        raise CliError(terminal_safe(refused.message)) from None
    echo(f"{recorded.verdict}: call {terminal_safe(args.call_id)} of run {run.run_id}")
    return 0


async def _ended(run: AgentRun, what: str) -> CliError | None:
    """The error for a run that has ended (saying how), or None when it is still open."""
    description = await describe_run(run)
    if description.close_time is None:
        return None
    return CliError(f"run {run.run_id} has ended ({status_name(description)}): {what}")


async def cmd_steer(args: argparse.Namespace) -> int:
    """Signal a new instruction."""
    tools = await tools_for(args)
    run = run_of(tools, args)
    try:
        async with translate_rpc_errors(run.run_id):
            try:
                await run.steer(args.text, skip_remaining=args.skip_remaining)
            except RPCError as error:
                # A signal to an ended run is "not found": say it ended, and how.
                ended = await _ended(run, "nothing to steer") if _not_found(error) else None
                if ended is not None:
                    raise ended from None
                raise
    except ValidationError as error:  # empty or too long: checked before sending
        problem = error.errors(include_url=False, include_input=False)[0]["msg"]
        raise CliError(f"not sent to run {run.run_id}: {problem}") from None
    skipping = "; the turn's calls not started yet are skipped" if args.skip_remaining else ""
    echo(f"sent to run {run.run_id}{skipping}: the model reads it before its next turn")
    return 0


def _not_found(error: RPCError) -> bool:
    return error.status == RPCStatusCode.NOT_FOUND


async def cmd_cancel(args: argparse.Namespace) -> int:
    """Ask a run to end cleanly; a run already asked, or already ended, is said to be."""
    tools = await tools_for(args)
    run = run_of(tools, args)
    async with translate_rpc_errors(run.run_id):
        description = await describe_run(run)
        if description.close_time is not None:
            how = status_name(description)
            if how == "CANCELED":
                echo(f"run {run.run_id} was already cancelled")
                return 0
            raise CliError(f"run {run.run_id} has ended ({how}): nothing to cancel")
        extended = description.raw_description.workflow_extended_info
        if not run.prefix and extended.cancel_requested:
            echo(f"cancellation was already requested for run {run.run_id}: it is ending")
            return 0
        await run.cancel(args.reason)
    echo(f"cancellation requested for run {run.run_id}")
    return 0
