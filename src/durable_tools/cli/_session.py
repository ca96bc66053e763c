"""`durable-tools send` and `close`: talk to a session (a run that waits for messages).

`send --model SPEC` starts the session when none runs under its id (update-with-start, as
`DurableTools.send` does); `run --session` (`_run_start`) starts one with its first message.
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
from collections.abc import Awaitable, Callable

from temporalio.client import WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError
from temporalio.exceptions import ApplicationError

from durable_tools.cli._agent_flags import add_agent_flags, add_idle_timeout_flag, given_agent_flags
from durable_tools.cli._commands import agent_config, describe_open_run, no_worker, tools_for
from durable_tools.cli._errors import CliError, translate_rpc_errors
from durable_tools.cli._flags import add_connection_flags
from durable_tools.cli._output import echo
from durable_tools.client.render._text import terminal_safe
from durable_tools.client.runs._agent_run import AgentRun
from durable_tools.client.runs._watch import RunWatcher
from durable_tools.client.sessions._messages import SentMessage, SessionRefused
from durable_tools.protocol._limits import check_handler_prefix
from durable_tools.protocol._session_types import FAILED, SessionReply
from durable_tools.tools._context import Identity

__all__ = [
    "TAKE_TIMEOUT",
    "add_session_commands",
    "cmd_close",
    "cmd_send",
    "echo_reply",
    "follow_reply",
    "send_command",
    "take_message",
]

TAKE_TIMEOUT = 30.0
"""Seconds to wait for a worker to take the message or the close (the run's update)."""


def send_command(run_id: str) -> str:
    """How the next message is sent to the session `run_id` (one shell word per id, safe
    to print on a terminal)."""
    return terminal_safe(f'durable-tools send {shlex.quote(run_id)} "..."')


def add_session_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `send RUN TEXT [--no-wait] [--model SPEC ...]` and `close RUN [--reason]`."""
    p = sub.add_parser(
        "send",
        help="send a session its next message and print the answer",
        description="Send the session RUN_ID its next message and print the answer. With "
        "--model, a session that does not run under RUN_ID yet is started with this message "
        "(update-with-start; the agent flags shape it then, and are ignored when it runs "
        "already); a session that ended is not started again under its id.",
    )
    p.add_argument("run_id", metavar="RUN_ID", help="the session (workflow) id")
    p.add_argument("text", metavar="TEXT", help="the user's next message")
    p.add_argument(
        "--no-wait",
        action="store_true",
        help="return once the session took the message (its answer may wait on approvals)",
    )
    p.add_argument("--message-id", metavar="ID", help="the message's id (default: a new one)")
    _prefix_flag(p)
    starting = p.add_argument_group(
        "starting the session", "Only with --model, and only when no session runs under RUN_ID."
    )
    add_agent_flags(starting, model_required=False)
    add_idle_timeout_flag(starting)
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


async def take_message(
    sending: Awaitable[SentMessage], run_id: str, task_queue: str
) -> SentMessage:
    """The message once a worker took it for the run, or a `CliError` saying why not."""
    try:
        async with translate_rpc_errors(run_id):
            return await asyncio.wait_for(sending, TAKE_TIMEOUT)
    except SessionRefused as error:
        raise CliError(f"not sent to run {run_id}: {terminal_safe(str(error))}") from None
    except WorkflowUpdateFailedError as error:  # failed in the task that took it
        raise _session_failed(error) from None
    except (TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError):
        raise CliError(
            no_worker(task_queue, f"took the message within {TAKE_TIMEOUT:.0f} s")
        ) from None


async def follow_reply(
    run: AgentRun, sent: SentMessage, out: Callable[[str], None], task_queue: str
) -> SessionReply:
    """Wait for the message's answer, printing its tool calls and approvals meanwhile."""
    watcher = RunWatcher(run, out=out, task_queue=task_queue)
    reply = asyncio.ensure_future(sent.result())
    try:
        while not reply.done():
            await watcher.poll()
            await asyncio.wait({reply}, timeout=watcher.interval)
        if reply.exception() is None:
            await watcher.poll()  # what finished since the last look, and the new status
    finally:
        if not reply.done():
            reply.cancel()
    return await _reply(reply, run.run_id)


async def _reply(answer: Awaitable[SessionReply], run_id: str) -> SessionReply:
    """The message's answer; a server's refusal, or the run failing meanwhile, as a
    `CliError`."""
    async with translate_rpc_errors(run_id):
        try:
            return await answer
        except WorkflowUpdateFailedError as error:
            raise _session_failed(error) from None


def _session_failed(error: WorkflowUpdateFailedError) -> Exception:
    """A `CliError` (exit 1) with the reason of a run that failed while answering the
    message; any other failed update as it is."""
    cause = error.cause
    if isinstance(cause, ApplicationError) and cause.type == FAILED:
        return CliError(f"[{terminal_safe(cause.message)}]", 1)
    return error


def echo_reply(reply: SessionReply) -> None:
    """The answer, and a line when the message ended the session."""
    echo(terminal_safe(reply.answer or "", multiline=True))
    if reply.status != "awaiting_message":
        reason = f": {terminal_safe(reply.reason)}" if reply.reason else ""
        echo(f"[the session ended: {reply.status}{reason}]")


def _no_session(run_id: str) -> str:
    word = shlex.quote(run_id)
    return (
        f"no session {terminal_safe(word)} in this namespace: start one with "
        f"`durable-tools send {terminal_safe(word)} TEXT --model SPEC` "
        f"(or `durable-tools run PROMPT --session {terminal_safe(word)} --model SPEC`)"
    )


async def cmd_send(args: argparse.Namespace) -> int:
    """Send the message (starting the session with --model); print the answer (or, with
    --no-wait, the message's id)."""
    prefix = _prefix(args)
    if args.model is None:
        shaping = given_agent_flags(args) + ["--idle-timeout"] * (args.idle_timeout is not None)
        if shaping:
            raise CliError(
                f"{', '.join(shaping)} shape a session `send` starts, and it starts one only "
                "with --model: add --model SPEC (a session that runs already keeps its own "
                "settings)"
            )
    elif prefix:
        raise CliError(
            "--prefix names an agent loop embedded in a workflow of yours, which `send` "
            "cannot start: drop --model"
        )
    config = agent_config(args, session=True) if args.model is not None else None
    tools = await tools_for(args)
    run = AgentRun(tools.client, args.run_id, prefix=prefix)
    if config is None:
        description = await describe_open_run(
            run,
            "a session that ended takes no messages",
            missing=None if prefix else _no_session(run.run_id),
        )
        task_queue = description.task_queue
        sending = run.start_send(args.text, message_id=args.message_id)
    else:
        task_queue = tools.task_queue
        sending = tools.start_send(
            run.run_id,
            args.text,
            config=config,
            message_id=args.message_id,
            identity=Identity(user=args.user, tenant=args.tenant),
            granted_scopes=args.scope,
        )
    sent = await take_message(sending, run.run_id, task_queue)
    if args.no_wait:
        echo(f"message {sent.id} taken by run {run.run_id}; the answer follows in its events")
        return 0
    echo_reply(await _reply(sent.result(), run.run_id))
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
