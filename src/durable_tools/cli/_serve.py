"""`durable-tools serve` (the web inbox, and the OAuth callback) and `inbox token add`."""

from __future__ import annotations

import argparse
from pathlib import Path

from durable_tools._extras import install_hint
from durable_tools.cli._commands import tools_for
from durable_tools.cli._errors import CliError
from durable_tools.cli._oauth import oauth_manager
from durable_tools.cli._output import echo
from durable_tools.cli._signals import stop_on_signals

__all__ = ["cmd_serve", "cmd_token_add"]


def _tokens_path(args: argparse.Namespace) -> Path:
    from durable_tools.inbox import default_tokens_file

    return Path(args.tokens_file) if args.tokens_file else default_tokens_file()


async def cmd_serve(args: argparse.Namespace) -> int:
    """Serve the inbox (and the OAuth callback, with `--oauth-providers`) until Ctrl-C."""
    try:
        from durable_tools.inbox import (
            AuthConfig,
            InboxConfig,
            InboxServer,
            TokenFileError,
            TokenStore,
            create_app,
            session_secret,
        )
    except ImportError as error:
        raise CliError(f"the inbox needs `{install_hint('inbox')}` ({error})") from None
    from durable_tools.oauth import make_callback_app, run_notifier

    tokens_file = _tokens_path(args)
    try:
        auth = AuthConfig(
            TokenStore(tokens_file),
            trusted_proxies=tuple(args.trusted_proxy),
            user_header=args.user_header,
        )
        secret = session_secret(args.session_secret_file)
    except (TokenFileError, OSError, ValueError) as error:
        raise CliError(f"inbox configuration: {error}") from None
    tools = await tools_for(args)
    callback = None
    if args.oauth_providers:
        on_complete, on_error = run_notifier(tools.client)
        callback = make_callback_app(oauth_manager(args.oauth_providers), on_complete, on_error)
    config = InboxConfig(
        auth=auth,
        session_secret=secret,
        registry=getattr(args, "registry", None),
        ui_base=args.ui_url,
        secure_cookies=args.secure_cookies,
        oauth=callback,
    )
    try:
        server = InboxServer(create_app(tools, config), args.host, args.port)
    except OSError as error:
        raise CliError(f"cannot listen on {args.host}:{args.port}: {error}") from None
    await server.start()
    stop = stop_on_signals()
    echo(f"inbox at {server.url}/ (tokens: {tokens_file})", flush=True)
    if callback is not None:
        echo(f"OAuth callback at {server.url}{callback.path}", flush=True)
    if not args.trusted_proxy and not tokens_file.exists():
        echo(f"no users yet: `durable-tools inbox token add NAME --tokens-file {tokens_file}`")
    try:
        await stop.wait()
    finally:
        await server.stop()
    return 0


async def cmd_token_add(args: argparse.Namespace) -> int:
    """Make a token for a user, store its hash, print the token once."""
    from durable_tools.inbox import TokenFileError, add_token

    path = _tokens_path(args)
    try:
        token = add_token(path, args.user, args.group or None)
    except (TokenFileError, OSError) as error:
        raise CliError(str(error)) from None
    echo(token)
    echo(f"stored the hash for {args.user} in {path}; the token is not shown again", err=True)
    return 0
