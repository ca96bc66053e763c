"""`durable-tools answer`: answer the question a tool call's MCP server asks the user."""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Literal

from temporalio.client import WorkflowUpdateRPCTimeoutOrCancelledError

from durable_tools.cli._commands import describe_open_run, no_worker, run_of, tools_for
from durable_tools.cli._errors import CliError, translate_rpc_errors
from durable_tools.cli._flags import add_connection_flags, add_prefix_flag
from durable_tools.cli._output import echo
from durable_tools.client.inputs._answer import InputAnswerRejected, answer_input
from durable_tools.client.render._text import terminal_safe

__all__ = ["ANSWER_TIMEOUT", "add_answer_command", "cmd_answer"]

ANSWER_TIMEOUT = 30.0
"""Seconds to wait for a worker to take the answer (the run's update handler)."""


def add_answer_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `answer RUN CALL_ID --accept JSON | --decline | --cancel`."""
    p = sub.add_parser("answer", help="answer a question a tool's MCP server asks the user")
    p.add_argument("run_id", metavar="RUN_ID", help="the run (workflow) id")
    p.add_argument("call_id", metavar="CALL_ID", help="the tool call, as `pending` lists it")
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument(
        "--accept", metavar="JSON", help="the answer: a JSON object matching the question"
    )
    how.add_argument("--decline", action="store_true", help="refuse to answer")
    how.add_argument("--cancel", action="store_true", help="dismiss the question")
    add_prefix_flag(p)
    add_connection_flags(p)
    p.set_defaults(handler=cmd_answer)


async def cmd_answer(args: argparse.Namespace) -> int:
    """Send the answer; the run checks it against the question before it takes it."""
    content = None
    if args.accept is not None:
        try:
            content = json.loads(args.accept)
        except json.JSONDecodeError as error:
            raise CliError(f"--accept needs a JSON object: {error}", 2) from None
        if not isinstance(content, dict):
            raise CliError('--accept needs a JSON object, e.g. \'{"name": "Ada"}\'', 2)
    action: Literal["accept", "decline", "cancel"] = (
        "accept" if args.accept is not None else "decline" if args.decline else "cancel"
    )
    prefix = args.prefix
    tools = await tools_for(args)
    run = run_of(tools, args)
    description = await describe_open_run(run)
    try:
        async with translate_rpc_errors(run.run_id):
            result = await asyncio.wait_for(
                answer_input(run, args.call_id, action, content, prefix=prefix), ANSWER_TIMEOUT
            )
    except InputAnswerRejected as error:
        raise CliError(f"run {run.run_id}: {terminal_safe(str(error))}") from None
    except (TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError):
        raise CliError(
            no_worker(description.task_queue, f"took the answer within {ANSWER_TIMEOUT:.0f} s")
        ) from None
    echo(f"{action} sent to call {terminal_safe(args.call_id)} of run {run.run_id}: {result}")
    return 0
