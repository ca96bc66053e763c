"""`durable-tools codec-server`: decrypt payloads for the Temporal Web UI and CLI."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from durable_tools._extras import install_hint
from durable_tools.cli._errors import CliError
from durable_tools.cli._output import echo
from durable_tools.cli._signals import stop_on_signals

__all__ = ["add_codec_server_command", "cmd_codec_server"]


def add_codec_server_command(sub: Any) -> None:
    """Register `codec-server` on the top-level sub-parsers."""
    p = sub.add_parser(
        "codec-server",
        help="serve the Temporal codec-server protocol (decrypt payloads for the UI) until Ctrl-C",
        description="Keys come from DURABLE_TOOLS_CODEC_KEYS, DURABLE_TOOLS_CODEC_KEY_FILE "
        "or DURABLE_TOOLS_CODEC_KEY_PROVIDER. Callers authenticate with a Bearer token of "
        "the inbox's tokens file, the inbox's login cookie (same session secret and tokens "
        "file, so that logouts count here too), or the user header of a trusted proxy "
        "(recognised by its socket address, never by forwarding headers).",
    )
    p.add_argument("--host", default="127.0.0.1", help="listen address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8888, help="listen port (default 8888)")
    p.add_argument(
        "--ui-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a browser origin allowed to call (the Temporal UI's, e.g. http://127.0.0.1:8233)",
    )
    p.add_argument(
        "--tokens-file",
        metavar="FILE",
        help="users and token hashes (default $DURABLE_TOOLS_HOME/inbox-tokens.json)",
    )
    p.add_argument(
        "--group", action="append", default=[], metavar="G", help="serve only users in G"
    )
    p.add_argument(
        "--namespace", action="append", default=[], metavar="NS", help="serve only namespace NS"
    )
    p.add_argument(
        "--trusted-proxy",
        action="append",
        default=[],
        metavar="ADDR",
        help="a reverse proxy's address or network whose --user-header is believed",
    )
    p.add_argument("--user-header", default="X-Forwarded-User", help="the proxy's user header")
    p.add_argument(
        "--session-secret-file",
        metavar="FILE",
        help="the inbox's session secret, to accept its login (default "
        "DURABLE_TOOLS_INBOX_SECRET; none: Bearer tokens only)",
    )
    p.set_defaults(handler=cmd_codec_server)


async def cmd_codec_server(args: argparse.Namespace) -> int:
    """Serve `/encode` and `/decode` with the environment's keys until Ctrl-C."""
    try:
        from durable_tools.codec.server import CodecServerConfig, create_codec_app
        from durable_tools.inbox import (
            AuthConfig,
            InboxServer,
            TokenFileError,
            TokenStore,
            default_tokens_file,
            session_secret,
        )
    except ImportError as error:
        needs = f"the codec server needs `{install_hint('inbox')}`"
        raise CliError(f"{needs} ({error})") from None
    from durable_tools.codec import CodecKeyError, EncryptionCodec, data_converter_from_env

    try:
        converter = data_converter_from_env()
    except CodecKeyError as error:
        raise CliError(f"codec keys: {error}") from None
    if converter is None or not isinstance(converter.payload_codec, EncryptionCodec):
        raise CliError(
            "no codec keys: set DURABLE_TOOLS_CODEC_KEYS, DURABLE_TOOLS_CODEC_KEY_FILE "
            "or DURABLE_TOOLS_CODEC_KEY_PROVIDER"
        )
    tokens_file = Path(args.tokens_file) if args.tokens_file else default_tokens_file()
    try:
        auth = AuthConfig(
            TokenStore(tokens_file),
            trusted_proxies=tuple(args.trusted_proxy),
            user_header=args.user_header,
        )
        secret = session_secret(args.session_secret_file)
    except (TokenFileError, OSError, ValueError) as error:
        raise CliError(f"codec server configuration: {error}") from None
    config = CodecServerConfig(
        auth=auth,
        ui_origins=tuple(args.ui_origin),
        session_secret=secret,
        groups=tuple(args.group),
        namespaces=tuple(args.namespace),
    )
    app = create_codec_app(converter.payload_codec, config)
    try:
        server = InboxServer(app, args.host, args.port)
    except OSError as error:
        raise CliError(f"cannot listen on {args.host}:{args.port}: {error}") from None
    await server.start()
    stop = stop_on_signals()
    echo(f"codec server at {server.url} (tokens: {tokens_file})", flush=True)
    if not args.ui_origin:
        echo("no --ui-origin: browsers (the Temporal UI) cannot call it", err=True)
    try:
        await stop.wait()
    finally:
        await server.stop()
    return 0
