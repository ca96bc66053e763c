"""`durable-tools callbacks serve --tools MODULE RUN`: run a run's callback tools here.

MODULE (importable from the current directory) holds the handlers: a dict named
`callbacks` (or `MODULE:ATTR`) of tool name -> callable, or plain functions named after
the tools. Each published call is run on this machine and answered until the run ends.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from durable_tools.cli._commands import (
    describe_open_run,
    describe_run,
    run_of,
    status_name,
    tools_for,
)
from durable_tools.cli._errors import CliError
from durable_tools.cli._flags import add_connection_flags, add_prefix_flag
from durable_tools.cli._output import echo
from durable_tools.client.callbacks._serve import handlers_from_module, serve_callbacks
from durable_tools.client.render._text import terminal_safe
from durable_tools.protocol._callback_types import PendingCallback

__all__ = ["add_callbacks_command", "cmd_callbacks_serve"]


def add_callbacks_command(sub: Any) -> None:
    """Register `callbacks serve`."""
    p = sub.add_parser("callbacks", help="run a run's callback tools on this machine")
    verbs = p.add_subparsers(title="actions", metavar="ACTION", required=True)
    q = verbs.add_parser("serve", help="answer a run's callback calls until it ends")
    q.add_argument("run_id", metavar="RUN_ID", help="the run (workflow) id")
    # Not `dest="tools"`: that name is loaded as a tool registry before the command runs.
    q.add_argument(
        "--tools",
        dest="callbacks_module",
        required=True,
        metavar="MODULE[:ATTR]",
        help="handlers: a dict `callbacks` (or ATTR) of tool name -> callable, or functions "
        "named after the tools",
    )
    q.add_argument(
        "--poll-interval", type=float, default=0.5, metavar="SECONDS", help="default 0.5"
    )
    add_prefix_flag(q)
    add_connection_flags(q)
    q.set_defaults(handler=cmd_callbacks_serve)


def _said(pending: PendingCallback, outcome: str) -> None:
    echo(
        f"call {terminal_safe(pending.call_id)} ({terminal_safe(pending.tool)}): "
        + terminal_safe(outcome[:300])
    )


async def cmd_callbacks_serve(args: argparse.Namespace) -> int:
    """Answer the run's callback calls with the module's handlers until the run ends."""
    if "" not in sys.path:
        sys.path.insert(0, "")  # as `python -m`: a module in the current directory
    try:
        handlers = handlers_from_module(args.callbacks_module)
    except ValueError as error:
        raise CliError(str(error)) from None
    tools = await tools_for(args)
    run = run_of(tools, args)
    await describe_open_run(run)
    echo(f"serving callback tools {', '.join(sorted(handlers))} for run {run.run_id}")
    answered = await serve_callbacks(
        run.handle,
        handlers,
        poll_interval=args.poll_interval,
        on_answer=_said,
        prefix=args.prefix,
    )
    ended = await describe_run(run)
    echo(f"run {run.run_id} ended ({status_name(ended)}); {answered} calls answered here")
    return 0
