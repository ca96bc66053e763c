"""`durable-tools inbox token add / list / rotate / remove`: the inbox's users.

A token is printed once, when it is made (`add`, `rotate`), and never again: the file holds
only its hash, and `list` shows names, groups, when the token was made and a short
fingerprint of its hash.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from durable_tools._extras import install_hint
from durable_tools.client.render._text import render_table

from ._errors import CliError
from ._flags import add_json_flag
from ._output import dump_json, echo

__all__ = ["add_token_commands", "tokens_path"]


def tokens_path(args: argparse.Namespace) -> Path:
    """`--tokens-file`, else the inbox's default file."""
    from durable_tools.inbox import default_tokens_file

    return Path(args.tokens_file) if args.tokens_file else default_tokens_file()


def _require_inbox() -> None:
    """Import the inbox package (it needs its extra) before a command reads the file."""
    try:
        import durable_tools.inbox  # noqa: F401
    except ImportError as error:
        raise CliError(f"inbox tokens need `{install_hint('inbox')}` ({error})") from None


def _file_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tokens-file",
        metavar="FILE",
        help="users and token hashes (default $DURABLE_TOOLS_HOME/inbox-tokens.json)",
    )


def add_token_commands(inbox: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`inbox token ...` under the `inbox` command's sub-commands."""
    p = inbox.add_parser("token", help="API tokens: add, list, rotate, remove")
    token = p.add_subparsers(title="token commands", metavar="COMMAND", required=True)
    p = token.add_parser("add", help="make a new token for USER, print it once, store its hash")
    p.add_argument("user", metavar="USER", help="the user's name (letters, digits, ._@+-)")
    p.add_argument("--group", action="append", metavar="G", help="a group USER belongs to")
    _file_flag(p)
    p.set_defaults(handler=cmd_token_add)
    p = token.add_parser("list", help="the users: groups, when made, fingerprint (no tokens)")
    add_json_flag(p)
    _file_flag(p)
    p.set_defaults(handler=cmd_token_list)
    p = token.add_parser("rotate", help="replace USER's token (groups kept), print it once")
    p.add_argument("user", metavar="USER", help="an existing user")
    _file_flag(p)
    p.set_defaults(handler=cmd_token_rotate)
    p = token.add_parser("remove", help="remove USER: their token and sessions stop working")
    p.add_argument("user", metavar="USER", help="an existing user")
    _file_flag(p)
    p.set_defaults(handler=cmd_token_remove)


def _new_token(args: argparse.Namespace, token: str, verb: str) -> int:
    echo(token)
    echo(
        f"{verb} {args.user}'s token; its hash is in {tokens_path(args)}: the token is not "
        "shown again",
        err=True,
    )
    return 0


async def cmd_token_add(args: argparse.Namespace) -> int:
    """Make a token for a user, store its hash, print the token once."""
    _require_inbox()
    from durable_tools._callers._tokens import TokenFileError, add_token

    try:
        token = add_token(tokens_path(args), args.user, args.group or None)
    except (TokenFileError, OSError) as error:
        raise CliError(str(error)) from None
    return _new_token(args, token, "made")


async def cmd_token_rotate(args: argparse.Namespace) -> int:
    """Replace a user's token; print the new one once."""
    _require_inbox()
    from durable_tools._callers._tokens import TokenFileError, rotate_token

    try:
        token = rotate_token(tokens_path(args), args.user)
    except (TokenFileError, OSError) as error:
        raise CliError(str(error)) from None
    return _new_token(args, token, "rotated")


async def cmd_token_remove(args: argparse.Namespace) -> int:
    """Remove a user from the tokens file."""
    _require_inbox()
    from durable_tools._callers._tokens import TokenFileError, remove_token

    path = tokens_path(args)
    try:
        remove_token(path, args.user)
    except (TokenFileError, OSError) as error:
        raise CliError(str(error)) from None
    echo(f"removed {args.user} from {path}: their token and sessions no longer work")
    return 0


async def cmd_token_list(args: argparse.Namespace) -> int:
    """The users of the tokens file; never a token, nor a whole hash."""
    _require_inbox()
    from durable_tools._callers._tokens import TokenFileError, list_tokens

    path = tokens_path(args)
    try:
        entries = list_tokens(path)
    except (TokenFileError, OSError) as error:
        raise CliError(str(error)) from None
    if args.json:
        dump_json(
            [
                {
                    "user": e.name,
                    "groups": list(e.groups),
                    "created": e.created,
                    "fingerprint": e.fingerprint,
                }
                for e in entries
            ]
        )
    elif entries:
        rows = [
            [
                e.name,
                ",".join(e.groups),
                e.created.strftime("%Y-%m-%d %H:%M:%S %Z").strip() if e.created else "unknown",
                e.fingerprint,
            ]
            for e in entries
        ]
        echo(render_table(["user", "groups", "created", "fingerprint"], rows))
    else:
        echo(f"no users in {path}: `durable-tools inbox token add NAME`")
    return 0
