"""`durable-tools serve` (the OAuth callback) and the worker's OAuth broker from a file."""

from __future__ import annotations

import argparse
from pathlib import Path

from durable_tools.cli._errors import CliError, connect_or_explain
from durable_tools.cli._output import echo
from durable_tools.cli._signals import stop_on_signals
from durable_tools.oauth import (
    OAuthBroker,
    OAuthError,
    OAuthManager,
    load_providers,
    run_notifier,
    serve_callback,
)

__all__ = ["cmd_serve", "oauth_broker", "oauth_manager"]


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


async def cmd_serve(args: argparse.Namespace) -> int:
    """Serve the OAuth callback until Ctrl-C: exchange codes, store tokens, wake runs."""

    manager = oauth_manager(args.oauth_providers)
    client = await connect_or_explain()
    on_complete, on_error = run_notifier(client)
    server = await serve_callback(manager, on_complete, on_error, host=args.host, port=args.port)
    stop = stop_on_signals()
    echo(
        f"OAuth callback at {server.callback_url} (providers: "
        f"{', '.join(manager.providers.names())}); Ctrl-C to stop",
        flush=True,
    )
    try:
        await stop.wait()
    finally:
        await server.stop()
    return 0
