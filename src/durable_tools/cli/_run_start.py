"""`durable-tools run`: start an agent run, or a session (`--session`), and follow it with
`--wait`."""

from __future__ import annotations

import argparse
import asyncio
import shlex
from collections.abc import Callable

from temporalio.exceptions import WorkflowAlreadyStartedError

from durable_tools.client import AgentRun, DurableTools
from durable_tools.client.render._text import terminal_safe
from durable_tools.tools._context import Identity

from ._commands import agent_config, tools_for
from ._errors import CliError, translate_rpc_errors
from ._output import dump_json, echo
from ._project import project_defaults
from ._session import echo_reply, follow_reply, send_command, take_message
from ._ui import run_link
from ._watch import RunWatcher

__all__ = ["cmd_run"]


def _session_id(args: argparse.Namespace) -> str | None:
    """The run's id: `--id`, or the ID of `--session ID` (the two must agree)."""
    named = args.session if isinstance(args.session, str) else None
    if named is not None and args.run_id is not None and named != args.run_id:
        raise CliError(
            f"--session {named[:60]!a} and --id {args.run_id[:60]!a} name two runs: give one"
        )
    run_id: str | None = named or args.run_id
    return run_id


def _check_prompt(args: argparse.Namespace) -> str:
    if args.prompt is not None:
        return str(args.prompt)
    if isinstance(args.session, str):  # `run --session "What did ..."`: taken as the id
        raise CliError(
            f"no prompt: --session took {args.session[:60]!a} as the session's id; give the "
            "prompt first (`run PROMPT --session [ID]`) or after the id "
            "(`run --session ID PROMPT`)"
        )
    raise CliError("no prompt: `run PROMPT --model SPEC` (the user's request)")


async def cmd_run(args: argparse.Namespace) -> int:
    """Start a run (a session with `--session`); with `--wait`, follow it to its end (a
    session: to the first message's answer)."""
    prompt = _check_prompt(args)
    run_id = _session_id(args)
    session = args.session is not None
    if args.idle_timeout is not None and not session:
        raise CliError("--idle-timeout is a session's: add --session")
    project_defaults(args)
    config = agent_config(args, session=session)
    tools = await tools_for(args)
    identity = Identity(user=args.user, tenant=args.tenant)
    try:
        async with translate_rpc_errors():
            # A session followed with --wait starts waiting and takes the prompt as its first
            # message (an update), so its answer is the reply to wait for.
            run = await tools.start(
                "" if session and args.wait else prompt,
                config=config,
                run_id=run_id,
                identity=identity,
                granted_scopes=args.scope,
            )
    except WorkflowAlreadyStartedError:
        raise CliError(f"a run with id {run_id!r} already exists") from None
    what = "session" if session else "run"
    shown = terminal_safe(run.run_id)  # an id may hold anything: the terminal acts on none
    if not args.wait:
        if args.json:
            dump_json(
                {
                    "run_id": run.run_id,
                    "ui_url": run_link(run),
                    "task_queue": tools.task_queue,
                    "session": session,
                }
            )
        else:
            echo(f"started {what} {shown} on task queue {terminal_safe(tools.task_queue)}")
            echo(f"UI: {run_link(run)}")
            echo(f"follow it: durable-tools show {terminal_safe(shlex.quote(run.run_id))}")
            if session:
                echo(f"after its answer, the next message: {send_command(run.run_id)}")
        return 0

    # With --json, progress goes to stderr so stdout stays one JSON document.
    def progress(line: str) -> None:
        echo(line, err=args.json, flush=True)

    progress(f"started {what} {shown}")
    progress(f"UI: {run_link(run)}")
    try:
        if session:
            return await _first_answer(args, tools, run, prompt, progress)
        outcome = await RunWatcher(run, out=progress, task_queue=tools.task_queue).watch()
    except (KeyboardInterrupt, asyncio.CancelledError):
        echo(
            "\nstopped following; the run goes on: durable-tools show "
            + terminal_safe(shlex.quote(run.run_id)),
            err=True,
        )
        raise
    if args.json:
        dump_json(outcome.to_json(run_link(run)))
    else:
        if outcome.reason:
            echo(f"reason: {terminal_safe(outcome.reason)}")
        if outcome.final_answer is not None:
            echo("final answer:")
            echo(outcome.final_answer)
    return 0 if outcome.ok else 1


async def _first_answer(
    args: argparse.Namespace,
    tools: DurableTools,
    run: AgentRun,
    prompt: str,
    progress: Callable[[str], None],
) -> int:
    """Send the session its first message and print the answer; 0 unless it ended the run
    otherwise than completed (a limit, a cancel)."""
    sent = await take_message(run.start_send(prompt), run.run_id, tools.task_queue)
    reply = await follow_reply(run, sent, progress, tools.task_queue)
    if args.json:
        dump_json({"run_id": run.run_id, "ui_url": run_link(run), **reply.model_dump(mode="json")})
    else:
        echo("answer:")
        echo_reply(reply)
        if reply.status == "awaiting_message":
            echo(f"the next message: {send_command(run.run_id)}")
    return 0 if reply.status in ("awaiting_message", "completed") else 1
