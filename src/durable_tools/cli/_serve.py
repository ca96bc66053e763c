"""`durable-tools serve`: the web inbox, the OAuth callback, and the AG-UI endpoint."""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from durable_tools._extras import install_hint
from durable_tools.cli._commands import tools_for
from durable_tools.cli._errors import CliError
from durable_tools.cli._inbox_tokens import tokens_path
from durable_tools.cli._oauth import oauth_manager
from durable_tools.cli._output import echo
from durable_tools.cli._signals import stop_on_signals
from durable_tools.client.start._options import check_model_spec

__all__ = ["AGUI_PATH", "cmd_serve"]

AGUI_PATH = "/agui"
"""Where `serve --agui` mounts the AG-UI endpoint, beside the inbox."""


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

    tokens_file = tokens_path(args)
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
    app = create_app(tools, config)
    if args.agui:
        app = _with_agui(app, tools, auth, args)
    try:
        server = InboxServer(app, args.host, args.port)
    except OSError as error:
        raise CliError(f"cannot listen on {args.host}:{args.port}: {error}") from None
    await server.start()
    stop = stop_on_signals()
    echo(f"inbox at {server.url}/ (tokens: {tokens_file})", flush=True)
    if callback is not None:
        echo(f"OAuth callback at {server.url}{callback.path}", flush=True)
    if args.agui:
        echo(f"AG-UI endpoint at {server.url}{AGUI_PATH}/ (sessions of {args.agui})", flush=True)
    if not args.trusted_proxy and not tokens_file.exists():
        echo(f"no users yet: `durable-tools inbox token add NAME --tokens-file {tokens_file}`")
    try:
        await stop.wait()
    finally:
        await server.stop()
    return 0


def _with_agui(inbox: Any, tools: Any, auth: Any, args: argparse.Namespace) -> Any:
    """The inbox with the AG-UI endpoint mounted at `/agui` beside it (its own body limit,
    Bearer tokens of the same tokens file, no cookies: a browser's session with the
    inbox does not speak for the user on the endpoint)."""
    try:
        from starlette.applications import Starlette
        from starlette.routing import Mount

        from durable_tools.agui import AguiConfig, create_agui_app
    except ImportError as error:
        raise CliError(f"--agui needs `{install_hint('agui')}` ({error})") from None
    from durable_tools.workflows import AgentConfig, SessionConfig

    try:
        check_model_spec(args.agui)
        agent = AgentConfig(
            model=args.agui, instructions=args.agui_instructions, session=SessionConfig()
        )
    except ValueError as error:
        raise CliError(f"--agui: {error}") from None
    registry = getattr(args, "registry", None)
    agui = create_agui_app(tools, AguiConfig(agent=agent, auth=auth, registry=registry))

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with inbox.router.lifespan_context(inbox):  # the inbox's OAuth callback
            yield

    return Starlette(routes=[Mount(AGUI_PATH, agui), Mount("/", inbox)], lifespan=lifespan)
