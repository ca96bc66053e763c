"""Deciding for a group from the command line: the person decides, their membership checked.

A policy may name groups as deciders (`group:ops`). The inbox decides as
`alice via group:ops` after checking alice's membership; the CLI does the same against the
inbox's tokens file (which lists each user's groups), so a group is never recorded as the
person who decided, and nobody decides for a group the file does not put them in. The rule
itself (who may decide, under which name) is the one the run applies
(`protocol._deciders.decider_name`, through `AgentRun.decide_request`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from durable_tools._extras import install_hint
from durable_tools.protocol._deciders import GROUP_PREFIX, may_decide

from ._errors import CliError

__all__ = ["groups_for", "not_a_member"]


def _default_tokens_file() -> Path:
    from durable_tools.inbox import default_tokens_file

    return default_tokens_file()


def groups_for(
    name: str, deciders: Sequence[str], tokens_file: Path | None = None
) -> tuple[str, ...]:
    """The groups the tokens file (default: the inbox's) puts `name` in, read only when
    the policy names a group and not `name` itself; empty otherwise.

    Raises:
        CliError: a group decides and its membership cannot be checked (no inbox extra,
            an unreadable tokens file).
    """
    groups = [d for d in deciders if d.startswith(GROUP_PREFIX)]
    if not groups or may_decide(name, deciders):
        return ()
    try:  # the inbox package needs its extra: import it only when a group decides
        from durable_tools.inbox import TokenFileError, TokenStore
    except ImportError as error:
        raise CliError(
            f"a group decides this call ({', '.join(groups)}): checking {name!r}'s "
            f"membership reads the inbox's tokens file, which needs "
            f"`{install_hint('inbox')}` ({error})"
        ) from None
    path = tokens_file or _default_tokens_file()
    try:
        return TokenStore(path).groups_of(name) if path.exists() else ()
    except TokenFileError as error:
        raise CliError(f"cannot check {name!r}'s groups: {error}") from None


def not_a_member(name: str, deciders: Sequence[str], tokens_file: Path | None) -> str:
    """What to do when the tokens file puts `name` in none of the deciding groups ("" when
    no group decides)."""
    if not any(d.startswith(GROUP_PREFIX) for d in deciders):
        return ""
    path = tokens_file or _default_tokens_file()
    return (
        f"; the tokens file {path} puts {name!r} in none of its groups: decide through the "
        f"inbox, or add the user (durable-tools inbox token add {name} --group GROUP)"
    )
