"""The `durable-tools` command: servers, workers, runs, approvals and the demo.

Environment: `TEMPORAL_ADDRESS` (default 127.0.0.1:7233), `TEMPORAL_NAMESPACE`,
`DURABLE_TOOLS_TASK_QUEUE`, `DURABLE_TOOLS_SECRET_<NAME>` (worker secrets),
`DURABLE_TOOLS_ARTIFACTS` (artifact store), `DURABLE_TOOLS_HOME` (embedded server data).

Exit codes: 0 success; 1 a run that did not complete, or a decision not confirmed at the
prompt; 2 a usage or user error (no server, unknown run, a rejected or refused decision);
130 interrupted.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence

from durable_tools._extras import missing_extra_in

from ._commands import preload_tools
from ._errors import CliError
from ._output import echo
from ._parser import build_parser

__all__ = ["CliError", "build_parser", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code.

    Args:
        argv: The arguments without the program name. Without them (the console script),
            `sys.argv[1:]` is used and the process exits with the code.
    """
    code = _main(argv)
    if argv is None:
        # Run as the `durable-tools` program: leave without interpreter teardown. The
        # Temporal client's Rust threads can outlive the event loop and abort a finalizing
        # interpreter ("PyGILState_Release ... finalizing", temporalio/sdk-python#300).
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    try:
        # Before the event loop: a tools module may run its own (`attach_mcp_sync`).
        preload_tools(args)
        code: int = asyncio.run(args.handler(args))
    except CliError as error:
        echo(f"durable-tools: {error}", err=True)
        return error.exit_code
    except KeyboardInterrupt:
        echo("durable-tools: interrupted", err=True)
        return 130
    except BrokenPipeError:
        # The reader went away (`durable-tools runs | head`): not an error worth a traceback.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except Exception as error:
        # An optional feature without its extra (an s3:// artifact store without
        # aiobotocore): its message names the install command; a traceback adds nothing.
        missing = missing_extra_in(error)
        if missing is None:
            raise
        echo(f"durable-tools: {missing}", err=True)
        return 2
    sys.stdout.flush()
    return code
