"""Which request a decision names: the hash given with `--hash`, or the one a person
confirms at a terminal after seeing it.

A call id names no single request: a model may reuse it in a later turn with other
arguments. So `approve` never picks "whatever is pending now" on its own: either `--hash`
names the request the person reviewed (and a changed request is refused), or the command
shows the request at a terminal and decides only on an explicit "y". `deny` is the safe
direction: without `--hash` and without a terminal it denies the one request pending
under the call id (shown first), still refusing an unknown or decided call.
"""

from __future__ import annotations

import sys

from durable_tools.client.render._text import render_approval, terminal_safe
from durable_tools.client.runs._decide import MalformedDecision, arguments_hash_given, stale_request
from durable_tools.workflows import PendingApproval

from ._errors import CliError

__all__ = [
    "DECLINED_EXIT_CODE",
    "can_ask",
    "confirm",
    "describe_request",
    "hash_given",
    "require_hash_or_terminal",
    "stale",
]

DECLINED_EXIT_CODE = 1
"""Exit code when the person answers anything but yes: nothing was decided."""


def hash_given(given: str | None) -> str | None:
    """`--hash` as it will be sent (lower case, surrounding blanks dropped); None without it.

    Only the full hash is accepted (`arguments_hash_given`): never a prefix.

    Raises:
        CliError: `given` is not 64 hexadecimal characters.
    """
    if given is None:
        return None
    try:
        return arguments_hash_given(given)
    except MalformedDecision as error:
        raise CliError(f"--hash: {error}") from None


def can_ask() -> bool:
    """Whether a person can be asked: both the input and the output are a terminal."""
    return sys.stdin.isatty() and sys.stdout.isatty()


def require_hash_or_terminal(verb: str, digest: str | None) -> None:
    """Refuse an approval that names no request when nobody can be asked to confirm one
    (a denial goes ahead: it denies the one request pending under the call id).

    Raises:
        CliError: `approve` without `--hash`, and stdin or stdout is not a terminal.
    """
    if digest is None and verb == "approve" and not can_ask():
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


def stale(run_id: str, call_id: str) -> CliError:
    """The refusal for a `--hash` that names a request no longer pending."""
    return CliError(terminal_safe(stale_request(run_id, call_id)))
