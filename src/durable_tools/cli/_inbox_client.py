"""`approve`/`deny --inbox URL`: decide through the web inbox's API with a token.

The inbox authenticates the token and records its user as the decider (no `--as`); the
direct path (no `--inbox`) sends the update to Temporal itself and needs namespace rights.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

import httpx

from durable_tools._render import terminal_safe

from ._errors import CliError
from ._output import echo

__all__ = ["INBOX_TOKEN_ENV", "decide_via_inbox"]

INBOX_TOKEN_ENV = "DURABLE_TOOLS_INBOX_TOKEN"
"""The API token `approve`/`deny --inbox` sends."""


def _error(answer: httpx.Response) -> str:
    try:
        body: Any = answer.json()
    except ValueError:
        return f"HTTP {answer.status_code}"
    message = body.get("error") if isinstance(body, dict) else None
    return f"HTTP {answer.status_code}: {message or 'no reason given'}"


async def decide_via_inbox(args: argparse.Namespace) -> int:
    """Look the call up in the inbox's pending list, then decide it with that hash."""
    token = os.environ.get(INBOX_TOKEN_ENV, "")
    if not token:
        raise CliError(
            f"--inbox needs a token in {INBOX_TOKEN_ENV} (`durable-tools inbox token add`)"
        )
    if args.decider:
        raise CliError("--as does not apply with --inbox: the inbox records the token's user")
    base = args.inbox.rstrip("/")
    headers = {"Authorization": f"Bearer {token}"}
    verb = "approve" if args.approve else "deny"
    try:
        async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as http:
            listed = await http.get("/api/pending")
            if listed.status_code != 200:
                raise CliError(f"the inbox at {base} refused the listing: {_error(listed)}")
            found = next(
                (
                    item
                    for item in listed.json().get("pending", [])
                    if item.get("run_id") == args.run_id and item.get("call_id") == args.call_id
                ),
                None,
            )
            if found is None:
                raise CliError(
                    f"the inbox lists no approval pending for call "
                    f"{terminal_safe(args.call_id)} in run {terminal_safe(args.run_id)}"
                )
            shown = args.arguments_hash or found["arguments_hash"]
            echo(f"to {verb} as {listed.json().get('user')}: {found['tool']} (hash {shown})")
            answer = await http.post(
                f"/api/runs/{args.run_id}/calls/{args.call_id}/decide",
                json={"approve": args.approve, "reason": args.reason, "arguments_hash": shown},
            )
    except httpx.HTTPError as error:
        raise CliError(f"cannot reach the inbox at {base}: {type(error).__name__}") from None
    if answer.status_code != 200:
        raise CliError(f"not decided: {terminal_safe(_error(answer))}")
    echo(f"{answer.json()['verdict']}: call {terminal_safe(args.call_id)} of run {args.run_id}")
    return 0
