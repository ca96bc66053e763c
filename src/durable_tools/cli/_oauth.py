"""`durable-tools auth reissue` and OAuth from a providers file: the worker's broker and
the callback's manager."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from temporalio.client import WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError

from durable_tools.cli._commands import describe_open_run, no_worker, tools_for
from durable_tools.cli._errors import CliError, translate_rpc_errors
from durable_tools.cli._output import echo
from durable_tools.client.render._text import render_authorization, terminal_safe
from durable_tools.oauth import (
    OAuthBroker,
    OAuthError,
    OAuthManager,
    load_providers,
)
from durable_tools.workflows import AgentWorkflow

__all__ = ["REISSUE_TIMEOUT", "cmd_auth_reissue", "oauth_broker", "oauth_manager"]

REISSUE_TIMEOUT = 60.0
"""Seconds a re-issue may take (a worker must run the preflight that makes the new link)."""


def oauth_manager(providers_file: str) -> OAuthManager:
    """An OAuth manager for the providers in a TOML/JSON file, stores under DURABLE_TOOLS_HOME.

    The worker and `serve` must share the data directory and DURABLE_TOOLS_TOKEN_KEY: the
    callback stores the tokens the worker's tools then use.
    """
    path = Path(providers_file)
    if not path.is_file():
        raise CliError(f"no OAuth providers file at {path}", 2)
    try:
        return OAuthManager.from_data_dir(load_providers(path))
    except (OAuthError, ValueError) as error:
        raise CliError(f"OAuth configuration: {error}", 2) from None


def oauth_broker(providers_file: str | None) -> OAuthBroker | None:
    """The worker's broker, or None when no providers file is given."""
    return OAuthBroker(oauth_manager(providers_file)) if providers_file else None


async def cmd_auth_reissue(args: argparse.Namespace) -> int:
    """A fresh authorization link for a call waiting on one; prints the new link.

    The old link keeps working until it expires; the wait's deadline starts again.
    """
    tools = await tools_for(args)
    run = tools.run(args.run_id)
    description = await describe_open_run(run)
    try:
        async with translate_rpc_errors(run.run_id):
            pending = await asyncio.wait_for(
                run.handle.execute_update(AgentWorkflow.reissue_authorization, args.call_id),
                REISSUE_TIMEOUT,
            )
    except WorkflowUpdateFailedError as error:
        cause = error.cause
        message = getattr(cause, "message", None) or str(cause or error)
        raise CliError(f"rejected by run {run.run_id}: {terminal_safe(message)}") from None
    except (TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError):
        raise CliError(
            no_worker(description.task_queue, f"issued a new link within {REISSUE_TIMEOUT:.0f} s")
        ) from None
    echo(f"new link for call {terminal_safe(args.call_id)} of run {run.run_id}:")
    echo("  " + render_authorization(pending, run.run_id).replace("\n", "\n  "))
    return 0
