"""The argument parser: one sub-command per job, each bound to its async handler."""

from __future__ import annotations

import argparse

from ._commands import cmd_pending, cmd_run, cmd_runs, cmd_show, cmd_tools
from ._decide import cmd_cancel, cmd_decide, cmd_steer
from ._events import cmd_events
from ._oauth import cmd_serve
from ._services import cmd_demo, cmd_server, cmd_worker

__all__ = ["build_parser"]


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The `durable-tools` parser."""
    parser = argparse.ArgumentParser(
        prog="durable-tools",
        description="Run LLM-agent tools durably on Temporal.",
        epilog="Environment: TEMPORAL_ADDRESS (default 127.0.0.1:7233), TEMPORAL_NAMESPACE, "
        "DURABLE_TOOLS_TASK_QUEUE, DURABLE_TOOLS_SECRET_<NAME>, DURABLE_TOOLS_ARTIFACTS, "
        "DURABLE_TOOLS_HOME.",
    )
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")

    p = sub.add_parser("server", help="run the embedded Temporal dev server until Ctrl-C")
    p.add_argument(
        "--data-dir", help="state directory (default DURABLE_TOOLS_HOME or ~/.durable-tools)"
    )
    p.add_argument("--port", type=int, default=7233, help="frontend gRPC port (default 7233)")
    p.add_argument("--ui-port", type=int, default=None, help="Web UI port (default port+1000)")
    p.add_argument("--headless", action="store_true", help="no Web UI")
    p.set_defaults(handler=cmd_server)

    p = sub.add_parser("worker", help="run a worker for a tool registry until Ctrl-C/SIGTERM")
    p.add_argument("--tools", required=True, metavar="MODULE[:ATTR]", help="the tool registry")
    p.add_argument("--task-queue", help="default DURABLE_TOOLS_TASK_QUEUE or durable-tools")
    p.add_argument("--max-concurrent-activities", type=_positive, metavar="N")
    p.add_argument(
        "--graceful-shutdown",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="on shutdown, how long running tools may finish before they are cancelled",
    )
    p.add_argument(
        "--oauth-providers",
        metavar="FILE",
        help="TOML/JSON OAuth providers, for tools that need a user's authorization",
    )
    p.set_defaults(handler=cmd_worker)

    p = sub.add_parser("serve", help="serve the OAuth callback that resumes waiting runs")
    p.add_argument("--oauth-providers", required=True, metavar="FILE")
    p.add_argument("--host", default="127.0.0.1", help="listen address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8765, help="listen port (default 8765)")
    p.set_defaults(handler=cmd_serve)

    p = sub.add_parser("run", help="start an agent run")
    p.add_argument("prompt")
    p.add_argument("--model", required=True, help="e.g. scripted:steps.json or openai:gpt-4o-mini")
    p.add_argument("--tools", metavar="MODULE[:ATTR]", help="offer only this registry's tools")
    p.add_argument("--id", dest="run_id", metavar="RUN_ID", help="the run (workflow) id")
    p.add_argument("--name", default="agent", metavar="AGENT", help="agent name (default agent)")
    p.add_argument("--instructions", help="the system message")
    p.add_argument("--strategy", choices=("sequential", "parallel", "batched"), default=None)
    p.add_argument("--concurrency", type=_positive, metavar="N")
    p.add_argument("--max-turns", type=_positive, metavar="N")
    p.add_argument("--user", help="the user the run acts for")
    p.add_argument("--tenant", help="the tenant the run acts for")
    p.add_argument("--scope", action="append", default=[], metavar="S", help="granted scope")
    p.add_argument("--task-queue", help="default DURABLE_TOOLS_TASK_QUEUE or durable-tools")
    p.add_argument("--wait", action="store_true", help="follow the run and print its answer")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=cmd_run)

    p = sub.add_parser("show", help="status, approvals, timeline and answer of a run")
    p.add_argument("run_id", metavar="RUN_ID")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_show)

    p = sub.add_parser("events", help="a run's audit stream (kept events, or --follow)")
    p.add_argument("run_id", metavar="RUN_ID")
    p.add_argument("--follow", action="store_true", help="keep printing until the run ends")
    p.add_argument(
        "--sink",
        action="append",
        default=[],
        metavar="SPEC",
        help="also send every event to jsonl:PATH, log[:LOGGER] or otel (repeatable)",
    )
    p.add_argument(
        "--from", dest="cursor", type=int, default=0, metavar="N", help="first event index"
    )
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.set_defaults(handler=cmd_events)

    p = sub.add_parser("runs", help="recent runs")
    p.add_argument("--status", help="only runs with this AgentStatus (e.g. awaiting_approval)")
    p.add_argument("--limit", type=_positive, default=20)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_runs)

    p = sub.add_parser("pending", help="every run waiting on a person")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_pending)

    for verb in ("approve", "deny"):
        p = sub.add_parser(verb, help=f"{verb} a pending tool call")
        p.add_argument("run_id", metavar="RUN_ID")
        p.add_argument("call_id", metavar="CALL_ID")
        p.add_argument("--as", dest="decider", metavar="WHO", help="who decides (default $USER)")
        p.add_argument("--reason", help="why")
        p.add_argument("--hash", dest="arguments_hash", metavar="H", help="arguments hash shown")
        p.set_defaults(handler=cmd_decide, approve=verb == "approve")

    p = sub.add_parser("steer", help="give a run a new instruction before its next turn")
    p.add_argument("run_id", metavar="RUN_ID")
    p.add_argument("text")
    p.set_defaults(handler=cmd_steer)

    p = sub.add_parser("cancel", help="end a run cleanly")
    p.add_argument("run_id", metavar="RUN_ID")
    p.add_argument("--reason")
    p.set_defaults(handler=cmd_cancel)

    p = sub.add_parser("tools", help="print the model-visible schemas of a registry")
    p.add_argument("--tools", required=True, metavar="MODULE[:ATTR]")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_tools)

    p = sub.add_parser("demo", help="the whole story on the embedded server, in ~20 s")
    p.add_argument("--auto-approve", action="store_true", help="approve without asking")
    p.add_argument("--keep-server", action="store_true", help="leave the server running")
    p.set_defaults(handler=cmd_demo)
    return parser
