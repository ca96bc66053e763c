"""`durable-tools send` and `close`: talk to a session (a run that waits for messages)."""

from __future__ import annotations

import argparse
import asyncio

from temporalio.client import WorkflowUpdateRPCTimeoutOrCancelledError

from durable_tools._render import terminal_safe
from durable_tools._run_handle import AgentRun
from durable_tools._session_client import SessionRefused
from durable_tools.cli._commands import describe_open_run, no_worker, tools_for
from durable_tools.cli._errors import CliError, translate_rpc_errors
from durable_tools.cli._flags import add_connection_flags
from durable_tools.cli._output import echo
from durable_tools.protocol._limits import check_handler_prefix

__all__ = ["TAKE_TIMEOUT", "add_session_commands", "cmd_close", "cmd_send"]

TAKE_TIMEOUT = 30.0
"""Seconds to wait for a worker to take the message or the close (the run's update)."""


def add_session_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `send RUN TEXT [--no-wait]` and `close RUN [--reason]`."""
    p = sub.add_parser("send", help="send a session its next message and print the answer")
    p.add_argument("run_id", metavar="RUN_ID", help="the session (workflow) id")
    p.add_argument("text", metavar="TEXT", help="the user's next message")
    p.add_argument(
        "--no-wait",
        action="store_true",
        help="return once the session took the message (its answer may wait on approvals)",
    )
    p.add_argument("--message-id", metavar="ID", help="the message's id (default: a new one)")
    _prefix_flag(p)
    add_connection_flags(p)
    p.set_defaults(handler=cmd_send)

    p = sub.add_parser("close", help="end a session (after the answer it is working on)")
    p.add_argument("run_id", metavar="RUN_ID", help="the session (workflow) id")
    p.add_argument("--reason", help="why (kept in the run's history and events)")
    _prefix_flag(p)
    add_connection_flags(p)
    p.set_defaults(handler=cmd_close)


def _prefix_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--prefix",
        default="",
        metavar="PREFIX",
        help="RUN_ID is a workflow of yours with an agent loop embedded under this handler "
        "prefix (AgentLoop.register_handlers)",
    )


def _prefix(args: argparse.Namespace) -> str:
    try:
        return check_handler_prefix(args.prefix)
    except ValueError as error:
        raise CliError(f"--prefix: {terminal_safe(str(error))}", 2) from None


async def cmd_send(args: argparse.Namespace) -> int:
    """Send the message; print the answer (or, with --no-wait, the message's id)."""
    prefix = _prefix(args)
    tools = await tools_for(args)
    run = AgentRun(tools.client, args.run_id, prefix=prefix)
    description = await describe_open_run(run, "a session that ended takes no messages")
    try:
        async with translate_rpc_errors(run.run_id):
            sent = await asyncio.wait_for(
                run.start_send(args.text, message_id=args.message_id), TAKE_TIMEOUT
            )
    except SessionRefused as error:
        raise CliError(f"not sent to run {run.run_id}: {terminal_safe(str(error))}") from None
    except (TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError):
        raise CliError(
            no_worker(description.task_queue, f"took the message within {TAKE_TIMEOUT:.0f} s")
        ) from None
    if args.no_wait:
        echo(f"message {sent.id} taken by run {run.run_id}; the answer follows in its events")
        return 0
    async with translate_rpc_errors(run.run_id):
        reply = await sent.result()
    echo(terminal_safe(reply.answer or "", multiline=True))
    if reply.status != "awaiting_message":
        echo(f"[the session ended: {reply.status}{': ' + reply.reason if reply.reason else ''}]")
    return 0


async def cmd_close(args: argparse.Namespace) -> int:
    """Close the session."""
    prefix = _prefix(args)
    tools = await tools_for(args)
    run = AgentRun(tools.client, args.run_id, prefix=prefix)
    description = await describe_open_run(run, "it is closed already")
    try:
        async with translate_rpc_errors(run.run_id):
            verdict = await asyncio.wait_for(run.close(args.reason), TAKE_TIMEOUT)
    except SessionRefused as error:
        raise CliError(f"run {run.run_id}: {terminal_safe(str(error))}") from None
    except (TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError):
        raise CliError(
            no_worker(description.task_queue, f"took the close within {TAKE_TIMEOUT:.0f} s")
        ) from None
    echo(f"session {run.run_id}: {verdict}")
    return 0
