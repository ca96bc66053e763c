"""Which request a decision names: the hash given with `--hash`, or the one a person
confirms at a terminal after seeing it.

A call id names no single request: a model may reuse it in a later turn with other
arguments. So `approve`/`deny` never pick "whatever is pending now" on their own: either
`--hash` names the request the person reviewed (and a changed request is refused), or
the command shows the request at a terminal and decides only on an explicit "y".
"""

from __future__ import annotations

import re
import sys

from durable_tools._render import render_approval, terminal_safe
from durable_tools.workflows import PendingApproval

from ._errors import CliError

__all__ = [
    "DECLINED_EXIT_CODE",
    "can_ask",
    "confirm",
    "describe_request",
    "hash_given",
    "require_hash_or_terminal",
    "stale_request",
]

DECLINED_EXIT_CODE = 1
"""Exit code when the person answers anything but yes: nothing was decided."""

_FULL_HASH = re.compile(r"[0-9a-f]{64}")


def hash_given(given: str | None) -> str | None:
    """`--hash` as it will be sent (lower case, surrounding blanks dropped); None without it.

    Only the full hash is accepted. A prefix is refused rather than completed: a prefix
    short enough to type (12 hex characters are 48 bits) can be matched by arguments
    chosen for it, so it would not name the request the person reviewed.

    Raises:
        CliError: `given` is not 64 hexadecimal characters.
    """
    if given is None:
        return None
    digest = given.strip().lower()
    if not _FULL_HASH.fullmatch(digest):
        raise CliError(
            f"--hash must be the full arguments hash, 64 hexadecimal characters (got "
            f"{len(digest)} characters): copy it from `durable-tools pending` or `show`; a "
            "prefix is not accepted, since arguments can be chosen to share a short prefix"
        )
    return digest


def can_ask() -> bool:
    """Whether a person can be asked: both the input and the output are a terminal."""
    return sys.stdin.isatty() and sys.stdout.isatty()


def require_hash_or_terminal(verb: str, digest: str | None) -> None:
    """Refuse a decision that names no request when nobody can be asked to confirm one.

    Raises:
        CliError: no `--hash`, and stdin or stdout is not a terminal.
    """
    if digest is None and not can_ask():
        raise CliError(
            f"`{verb}` without --hash needs a terminal, to show you the request and ask you "
            "to confirm it; there is none, so nothing was decided. Pass --hash H, the "
            "arguments hash of the request you reviewed (`durable-tools pending` and `show` "
            "print it, in the exact command to run)"
        )


def describe_request(run_id: str, approval: PendingApproval) -> str:
    """A pending request as a person decides it: tool, arguments, hash, deciders,
    deadline, when it was asked, and the approvals it has of those it needs."""
    approvals = f"  approvals so far: {len(approval.approved_by)} of {approval.approvals_required}"
    if approval.approved_by:
        approvals += f" ({', '.join(approval.approved_by)})"
    asked = f"  requested at: {approval.requested_at.isoformat(sep=' ', timespec='seconds')}"
    shown = render_approval(run_id, approval, commands=False)
    return "\n".join([shown, terminal_safe(asked), terminal_safe(approvals)])


def confirm(verb: str) -> bool:
    """Ask at the terminal whether to `verb` the request just shown; only yes is yes."""
    try:
        answer = input(f"{verb} this request? [y/N] ")
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


def stale_request(run_id: str, call_id: str) -> CliError:
    """The refusal for a `--hash` that names a request no longer pending."""
    return CliError(
        f"the request pending for call {terminal_safe(call_id)} in run {terminal_safe(run_id)} "
        "has another arguments hash than the one you gave: it is not the request you saw (the "
        "model may have reused the call id with other arguments), so nothing was decided; "
        "look at it again with `durable-tools pending`"
    )
