"""`durable-tools schedule create|list|pause|unpause|trigger|delete`: runs on a calendar."""

from __future__ import annotations

import argparse
import math
from datetime import timedelta

from temporalio.client import ScheduleAlreadyRunningError
from temporalio.service import RPCError, RPCStatusCode

from durable_tools.client.render._text import render_table, terminal_safe
from durable_tools.client.start._schedules import DEFAULT_CATCHUP_WINDOW, OVERLAP_POLICIES
from durable_tools.tools._context import Identity

from ._agent_flags import add_agent_flags, positive
from ._commands import agent_config, tools_for
from ._errors import CliError, translate_rpc_errors
from ._flags import add_connection_flags, add_json_flag
from ._output import dump_json, echo

__all__ = ["add_schedule_command"]


def _seconds(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or not 10 <= value <= 366 * 86_400:
        raise argparse.ArgumentTypeError("must be between 10 seconds and a year")
    return value


def add_schedule_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`schedule` and its actions."""
    schedule = sub.add_parser("schedule", help="agent runs on a calendar (Temporal Schedules)")
    actions = schedule.add_subparsers(title="schedule commands", metavar="ACTION", required=True)

    p = actions.add_parser("create", help="start a run at each time of a cron expression")
    p.add_argument("schedule_id", metavar="NAME", help="names the schedule and prefixes its runs")
    p.add_argument(
        "--cron",
        action="append",
        required=True,
        metavar="EXPR",
        help='cron expression in UTC, e.g. "0 9 * * MON-FRI" (repeatable)',
    )
    p.add_argument(
        "--overlap",
        choices=tuple(OVERLAP_POLICIES),
        default="skip",
        help="when a run is due while the last one still runs (default skip: none starts)",
    )
    p.add_argument(
        "--catchup-window",
        type=_seconds,
        default=DEFAULT_CATCHUP_WINDOW.total_seconds(),
        metavar="SECONDS",
        help="how late a run missed during an outage may still start (default 300)",
    )
    p.add_argument("--paused", action="store_true", help="create it paused")
    p.add_argument("--note", help="why the schedule exists")
    p.add_argument("--prompt", required=True, help="the request each run gets")
    add_agent_flags(p, runs="runs")
    add_connection_flags(p)
    p.set_defaults(handler=cmd_schedule_create)

    p = actions.add_parser("list", help="the namespace's schedules")
    p.add_argument("--limit", type=positive, default=100, metavar="N", help="most schedules listed")
    add_json_flag(p)
    add_connection_flags(p)
    p.set_defaults(handler=cmd_schedule_list)

    for verb, help_text in (
        ("pause", "stop starting runs (runs already started go on)"),
        ("unpause", "start runs again"),
        ("trigger", "start a run now (the overlap policy applies)"),
        ("delete", "delete the schedule (runs already started go on)"),
    ):
        p = actions.add_parser(verb, help=help_text)
        p.add_argument("schedule_id", metavar="NAME", help="the schedule")
        if verb in ("pause", "unpause"):
            p.add_argument("--note", help="why")
        add_connection_flags(p)
        p.set_defaults(handler=cmd_schedule_action, action=verb)


async def cmd_schedule_create(args: argparse.Namespace) -> int:
    """Create the schedule; print its id and next run times."""
    config = agent_config(args)
    tools = await tools_for(args)
    try:
        async with translate_rpc_errors():
            handle = await tools.create_schedule(
                args.schedule_id,
                args.prompt,
                cron=args.cron,
                config=config,
                overlap=args.overlap,
                catchup_window=timedelta(seconds=args.catchup_window),
                paused=args.paused,
                note=args.note,
                identity=Identity(user=args.user, tenant=args.tenant),
                granted_scopes=args.scope,
            )
            described = await handle.describe()
    except ScheduleAlreadyRunningError:
        raise CliError(f"a schedule named {args.schedule_id!r} already exists") from None
    except ValueError as error:
        raise CliError(str(error)) from None
    upcoming = ", ".join(
        t.strftime("%Y-%m-%d %H:%M:%S UTC") for t in described.info.next_action_times[:3]
    )
    state = "paused" if args.paused else f"next runs: {upcoming or 'none'}"
    echo(f"schedule {terminal_safe(handle.id)} created ({state})")
    return 0


async def cmd_schedule_list(args: argparse.Namespace) -> int:
    """Every schedule of the namespace, the agent's first."""
    tools = await tools_for(args)
    async with translate_rpc_errors():
        schedules = await tools.schedules(limit=max(args.limit, 1))
    if args.json:
        dump_json([s.model_dump(mode="json") for s in schedules])
        return 0
    if not schedules:
        echo("no schedules")
        return 0
    rows = [
        [
            terminal_safe(s.schedule_id),
            "; ".join(terminal_safe(c) for c in s.cron)
            or ("(not an agent)" * (not s.agent_workflow)),
            "paused" if s.paused else "active",
            s.next_runs[0].strftime("%Y-%m-%d %H:%M:%S") if s.next_runs and not s.paused else "",
            terminal_safe(s.recent_runs[-1]) if s.recent_runs else "",
        ]
        for s in schedules
    ]
    echo(render_table(["schedule", "cron", "state", "next run", "last run"], rows))
    return 0


def _not_ours(agent_workflow: bool) -> str:
    return "" if agent_workflow else "(another workflow's)"


async def cmd_schedule_action(args: argparse.Namespace) -> int:
    """pause, unpause, trigger or delete one schedule."""
    tools = await tools_for(args)
    try:
        handle = tools.schedule(args.schedule_id)
    except ValueError as error:
        raise CliError(str(error)) from None
    async with translate_rpc_errors():
        try:
            if args.action == "pause":
                await handle.pause(note=args.note or "paused from durable-tools")
            elif args.action == "unpause":
                await handle.unpause(note=args.note or "unpaused from durable-tools")
            elif args.action == "trigger":
                await handle.trigger()
            else:
                await handle.delete()
        except RPCError as error:
            if error.status == RPCStatusCode.NOT_FOUND:
                raise CliError(
                    f"no schedule named {args.schedule_id!r} in this namespace"
                ) from None
            raise
    done = {"pause": "paused", "unpause": "unpaused", "trigger": "triggered", "delete": "deleted"}
    echo(f"schedule {terminal_safe(handle.id)} {done[args.action]}")
    return 0
