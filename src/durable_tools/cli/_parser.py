"""The argument parser: one sub-command per job, each bound to its async handler."""

from __future__ import annotations

import argparse
import importlib.metadata

from ._agent_flags import add_agent_flags, add_idle_timeout_flag, positive
from ._answer import add_answer_command
from ._artifact import cmd_artifact_get
from ._callbacks import add_callbacks_command
from ._codec import add_codec_server_command
from ._commands import cmd_show, cmd_tools
from ._decide import cmd_cancel, cmd_decide, cmd_steer
from ._deployment import add_deployment_flags
from ._events import cmd_events
from ._flags import add_connection_flags, add_json_flag, add_prefix_flag
from ._inbox_tokens import add_token_commands
from ._lists import cmd_pending, cmd_runs
from ._model_limits import add_model_limit_flag
from ._oauth import cmd_auth_reissue
from ._policy import add_policy_commands
from ._project import add_project_flag
from ._run_filters import add_filter_flags
from ._run_start import cmd_run
from ._schedule import add_schedule_command
from ._serve import cmd_serve
from ._services import cmd_demo, cmd_server, cmd_worker
from ._session import add_session_commands
from ._telemetry import add_telemetry_flags
from ._watch import cmd_watch

__all__ = ["build_parser"]


def _installed_version() -> str:
    try:
        return importlib.metadata.version("durable-tools")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree, not installed
        return "(not installed)"


def build_parser() -> argparse.ArgumentParser:
    """The `durable-tools` parser."""
    parser = argparse.ArgumentParser(
        prog="durable-tools",
        description="Run LLM-agent tools durably on Temporal.",
        epilog="Environment: TEMPORAL_ADDRESS (default 127.0.0.1:7233), TEMPORAL_NAMESPACE, "
        "TEMPORAL_API_KEY, TEMPORAL_TLS_*, TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE (as for the "
        "`temporal` CLI; each command that talks to Temporal also takes its flags), "
        "DURABLE_TOOLS_TASK_QUEUE, DURABLE_TOOLS_SECRET_<NAME>, DURABLE_TOOLS_ARTIFACTS "
        "(a directory or s3://bucket/prefix), DURABLE_TOOLS_S3_ENDPOINT, DURABLE_TOOLS_HOME.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_installed_version()}")
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")

    p = sub.add_parser("server", help="run the embedded Temporal dev server until Ctrl-C")
    p.add_argument(
        "--data-dir", help="state directory (default DURABLE_TOOLS_HOME or ~/.durable-tools)"
    )
    p.add_argument(
        "--port",
        type=int,
        default=None,
        help="frontend gRPC port (default: the port of TEMPORAL_ADDRESS, else 7233)",
    )
    p.add_argument("--ui-port", type=int, default=None, help="Web UI port (default port+1000)")
    p.add_argument("--headless", action="store_true", help="no Web UI")
    p.add_argument(
        "--ui-codec-endpoint",
        metavar="URL",
        help="the codec server the Web UI decodes payloads with (durable-tools codec-server)",
    )
    p.set_defaults(handler=cmd_server)

    p = sub.add_parser("worker", help="run a worker for a tool registry until Ctrl-C/SIGTERM")
    p.add_argument(
        "--tools",
        metavar="MODULE[:ATTR]",
        help="the tool registry (or the project file's `tools`, or none: its sources only)",
    )
    add_project_flag(p)
    p.add_argument("--task-queue", help="default DURABLE_TOOLS_TASK_QUEUE or durable-tools")
    p.add_argument(
        "--max-concurrent-activities",
        type=positive,
        metavar="N",
        help="most tool and model activities this worker runs at once (default: the SDK's)",
    )
    p.add_argument(
        "--graceful-shutdown",
        type=float,
        metavar="SECONDS",
        help="on shutdown, how long running tools may finish before they are cancelled "
        "(default 30)",
    )
    p.add_argument(
        "--oauth-providers",
        metavar="FILE",
        help="TOML/JSON OAuth providers, for tools that need a user's authorization",
    )
    p.add_argument(
        "--require-identity",
        action="store_true",
        help="refuse runs whose identity names no user or no tenant (start them with "
        "--user and --tenant)",
    )
    add_model_limit_flag(p)
    add_deployment_flags(p)
    add_telemetry_flags(p)
    add_connection_flags(p)
    p.set_defaults(handler=cmd_worker, project_tools=True)

    p = sub.add_parser(
        "serve", help="serve the web inbox for approvals (and the OAuth callback) until Ctrl-C"
    )
    p.add_argument("--host", default="127.0.0.1", help="listen address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8765, help="listen port (default 8765)")
    p.add_argument(
        "--tokens-file",
        metavar="FILE",
        help="users and token hashes (default $DURABLE_TOOLS_HOME/inbox-tokens.json)",
    )
    p.add_argument(
        "--trusted-proxy",
        action="append",
        default=[],
        metavar="ADDR",
        help="a reverse proxy's address or network whose --user-header is believed",
    )
    p.add_argument("--user-header", default="X-Forwarded-User", help="the proxy's user header")
    p.add_argument("--ui-url", metavar="URL", help="Temporal UI base (default TEMPORAL_UI_URL)")
    p.add_argument("--tools", metavar="MODULE[:ATTR]", help="show these tools' descriptions")
    p.add_argument(
        "--session-secret-file",
        metavar="FILE",
        help="signs session cookies (default DURABLE_TOOLS_INBOX_SECRET, else per process)",
    )
    p.add_argument("--secure-cookies", action="store_true", help="cookies over HTTPS only")
    p.add_argument(
        "--oauth-providers", metavar="FILE", help="also serve the OAuth callback for these"
    )
    p.add_argument(
        "--agui",
        metavar="MODEL",
        help="also serve the AG-UI endpoint at /agui, its threads sessions of this model "
        "(docs/agui.md; needs the agui extra; users from --tokens-file)",
    )
    p.add_argument(
        "--agui-instructions", metavar="TEXT", help="the system message of the AG-UI sessions"
    )
    add_connection_flags(p)
    p.set_defaults(handler=cmd_serve)
    add_codec_server_command(sub)

    p = sub.add_parser("inbox", help="manage the web inbox's users")
    add_token_commands(p.add_subparsers(title="inbox commands", metavar="COMMAND", required=True))

    p = sub.add_parser(
        "run",
        help="start an agent run",
        description="Start an agent run on PROMPT; with --session, a session that answers "
        "PROMPT and then waits for the next message (`durable-tools send`).",
    )
    p.add_argument("prompt", nargs="?", metavar="PROMPT", help="the user's request (required)")
    p.add_argument("--id", dest="run_id", metavar="RUN_ID", help="the run (workflow) id")
    p.add_argument(
        "--wait",
        action="store_true",
        help="follow the run and print its answer (a session's: the answer to PROMPT)",
    )
    p.add_argument(
        "--session",
        nargs="?",
        const=True,
        metavar="ID",
        help="start a session: after its answer it waits for the next message "
        "(`durable-tools send ID TEXT`; docs/sessions.md); ID is its id, as --id",
    )
    add_idle_timeout_flag(p)
    add_agent_flags(p, project=True)
    add_project_flag(p)
    add_json_flag(p)
    add_connection_flags(p)
    p.set_defaults(handler=cmd_run)

    p = sub.add_parser("show", help="status, approvals, timeline and answer of a run")
    p.add_argument("run_id", metavar="RUN_ID", help="the run (workflow) id")
    add_prefix_flag(p)
    add_json_flag(p)
    add_connection_flags(p)
    p.set_defaults(handler=cmd_show)

    p = sub.add_parser("events", help="a run's audit stream (kept events, or --follow)")
    p.add_argument("run_id", metavar="RUN_ID", help="the run (workflow) id")
    add_prefix_flag(p)
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
    add_connection_flags(p)
    p.set_defaults(handler=cmd_events)

    p = sub.add_parser("watch", help="a run live: the model's text as generated, tool progress")
    p.add_argument("run_id", metavar="RUN_ID", help="the run (workflow) id")
    p.add_argument("--json", action="store_true", help="one JSON object per event")
    add_connection_flags(p)
    p.set_defaults(handler=cmd_watch)

    p = sub.add_parser("runs", help="recent runs")
    p.add_argument("--status", help="only runs with this AgentStatus (e.g. awaiting_approval)")
    p.add_argument("--limit", type=positive, default=20, help="most runs listed (default 20)")
    add_filter_flags(p)
    add_json_flag(p)
    add_connection_flags(p)
    p.set_defaults(handler=cmd_runs)

    p = sub.add_parser("pending", help="every run waiting on a person")
    p.add_argument(
        "--limit",
        type=positive,
        default=200,
        help="most runs listed (default 200); a cut list says so",
    )
    add_filter_flags(p)
    add_json_flag(p)
    add_connection_flags(p)
    p.set_defaults(handler=cmd_pending)

    for verb in ("approve", "deny"):
        p = sub.add_parser(
            verb,
            help=f"{verb} a pending tool call",
            description=f"{verb.capitalize()} the request pending for CALL_ID in RUN_ID, named "
            "by --hash (what `pending` and `show` print); without --hash the request is shown "
            "at the terminal and decided only if you answer y"
            + (
                ", and without a terminal nothing is approved."
                if verb == "approve"
                else "; without a terminal, the one request pending under CALL_ID is shown "
                "and denied (denying is the safe direction; an unknown or decided call is "
                "still refused)."
            ),
        )
        p.add_argument("run_id", metavar="RUN_ID", help="the run (workflow) id")
        p.add_argument("call_id", metavar="CALL_ID", help="the tool call, as `pending` lists it")
        add_prefix_flag(p)
        p.add_argument("--as", dest="decider", metavar="WHO", help="who decides (default $USER)")
        p.add_argument("--reason", help="why (kept in the run's history)")
        p.add_argument(
            "--hash",
            dest="arguments_hash",
            metavar="H",
            help="the full arguments hash of the request you reviewed (64 hex characters); "
            "a request with other arguments is refused",
        )
        p.add_argument(
            "--inbox",
            metavar="URL",
            help="decide through the web inbox's API with DURABLE_TOOLS_INBOX_TOKEN "
            "(without it: a direct Temporal update, for operators with namespace rights)",
        )
        add_connection_flags(p)
        p.add_argument(
            "--tokens-file",
            metavar="FILE",
            help="the inbox's tokens file, for a call a group decides: --as USER decides "
            "as `USER via group:G` when the file puts USER in G (default "
            "$DURABLE_TOOLS_HOME/inbox-tokens.json)",
        )
        p.set_defaults(handler=cmd_decide, approve=verb == "approve")

    add_policy_commands(sub)
    add_schedule_command(sub)
    add_callbacks_command(sub)
    add_answer_command(sub)
    add_session_commands(sub)
    auth = sub.add_parser("auth", help="OAuth waits: re-issue an expired link")
    p = auth.add_subparsers(title="auth commands", metavar="ACTION", required=True).add_parser(
        "reissue", help="a fresh authorization link for a waiting call"
    )
    p.add_argument("run_id", metavar="RUN_ID", help="the run (workflow) id")
    p.add_argument("call_id", metavar="CALL_ID", help="the tool call, as `pending` lists it")
    add_connection_flags(p)
    p.set_defaults(handler=cmd_auth_reissue)

    artifact = sub.add_parser("artifact", help="artifacts: the full outputs kept out of runs")
    actions = artifact.add_subparsers(title="artifact commands", metavar="ACTION", required=True)
    p = actions.add_parser("get", help="write an artifact's bytes (checked against its sha256)")
    p.add_argument("ref", metavar="REF", help="the artifact's URI, as a truncated output names it")
    p.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    p.add_argument(
        "--store",
        metavar="URL",
        help="s3://bucket/prefix or a directory (default: where REF points)",
    )
    p.set_defaults(handler=cmd_artifact_get)

    p = sub.add_parser("steer", help="give a run a new instruction before its next turn")
    p.add_argument("run_id", metavar="RUN_ID", help="the run (workflow) id")
    add_prefix_flag(p)
    p.add_argument("text", help="the instruction the model reads before its next turn")
    p.add_argument(
        "--skip-remaining",
        action="store_true",
        help="skip this turn's tool calls that have not started (and pending approvals)",
    )
    add_connection_flags(p)
    p.set_defaults(handler=cmd_steer)

    p = sub.add_parser("cancel", help="end a run cleanly")
    p.add_argument("run_id", metavar="RUN_ID", help="the run (workflow) id")
    add_prefix_flag(p)
    p.add_argument("--reason", help="why (kept in the run's history)")
    add_connection_flags(p)
    p.set_defaults(handler=cmd_cancel)

    p = sub.add_parser("tools", help="print the model-visible schemas of a registry")
    p.add_argument(
        "action",
        nargs="?",
        choices=["refresh"],
        help="refresh: read the project's sources again and print what changed since the "
        "last read (running workers follow on their own schedule)",
    )
    p.add_argument(
        "--state",
        metavar="FILE",
        help="refresh: where the last read is kept (default: .durable-tools/tools-read.json "
        "beside the project file)",
    )
    p.add_argument(
        "--tools",
        metavar="MODULE[:ATTR]",
        help="the tool registry (with --project: under the file's sources)",
    )
    add_project_flag(p)
    add_json_flag(p)
    p.add_argument("--transport", help="only tools reached this way (function, mcp, http, ...)")
    p.add_argument("--source", help="only tools whose source matches this glob")
    p.add_argument("--mime-type", help="only tools handling this MIME type")
    p.add_argument("--tag", help="only tools with this tag")
    p.set_defaults(handler=cmd_tools, project_tools=True)

    p = sub.add_parser("demo", help="the whole story on the embedded server, in ~20 s")
    p.add_argument("--auto-approve", action="store_true", help="approve without asking")
    p.add_argument("--keep-server", action="store_true", help="leave the server running")
    p.set_defaults(handler=cmd_demo)
    _describe_every_command(parser)
    return parser


def _describe_every_command(parser: argparse.ArgumentParser) -> None:
    """Give every sub-command (at any depth) without a description its help as one.

    `add_parser(help=...)` shows the help only in the parent's command list; the command's
    own `--help` page would start with the bare usage line. The text is the help's own, so
    the generated CLI reference (docs/hooks/cli_reference.py), which prints a description
    only where it differs from the help, does not say it twice.
    """
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {choice.dest: choice.help for choice in action._choices_actions}
        for name, command in action.choices.items():
            text = helps.get(name)
            if command.description is None and text:
                command.description = text
            _describe_every_command(command)
