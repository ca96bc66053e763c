"""Deciding for a group from the command line: the person decides, their membership checked.

A policy may name groups as deciders (`group:ops`). The inbox decides as
`alice via group:ops` after checking alice's membership; the CLI does the same against the
inbox's tokens file (which lists each user's groups), so a group is never recorded as the
person who decided, and nobody decides for a group the file does not put them in.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from durable_tools._extras import install_hint
from durable_tools.protocol._deciders import GROUP_PREFIX, may_decide, name_key, person_of

from ._errors import CliError

__all__ = ["decider_for"]


def decider_for(name: str, deciders: Sequence[str], tokens_file: Path | None = None) -> str:
    """The decider name to send for `name` on a call with these `deciders`.

    `name` itself when the policy lets it decide (named, or anyone may); `name via group:g`
    when the policy names a group the tokens file (default: the inbox's) puts `name` in.

    Raises:
        CliError: `name` may decide neither as a person nor through a group it belongs to.
    """
    if person_of(name) != name_key(name):
        # `bob via group:ops` would claim a membership nobody checked.
        raise CliError(
            f"--as takes a person's name, not {name!r}: the group a member decides through "
            "is found in the tokens file"
        )
    if may_decide(name, deciders):
        return name
    named = ", ".join(deciders)
    groups = [d for d in deciders if d.startswith(GROUP_PREFIX)]
    if not groups:
        raise CliError(f"{name!r} may not decide this call (deciders: {named})")
    try:  # the inbox package needs its extra: import it only when a group decides
        from durable_tools.inbox import TokenFileError, TokenStore, default_tokens_file
    except ImportError as error:
        raise CliError(
            f"a group decides this call ({', '.join(groups)}): checking {name!r}'s "
            f"membership reads the inbox's tokens file, which needs "
            f"`{install_hint('inbox')}` ({error})"
        ) from None
    path = tokens_file or default_tokens_file()
    try:
        member_of = set(TokenStore(path).groups_of(name)) if path.exists() else set()
    except TokenFileError as error:
        raise CliError(f"cannot check {name!r}'s groups: {error}") from None
    for group in groups:
        if group[len(GROUP_PREFIX) :] in member_of:
            return f"{name} via {group}"
    raise CliError(
        f"{name!r} may not decide this call (deciders: {named}); the tokens file {path} puts "
        f"{name!r} in none of its groups: decide through the inbox, or add the user "
        f"(durable-tools inbox token add {name} --group GROUP)"
    )
