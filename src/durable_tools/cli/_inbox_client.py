"""`approve`/`deny --inbox URL`: decide through the web inbox's API with a token.

As without `--inbox`, the decision names the request the person saw: by `--hash`, or by
a yes at the terminal to the request shown (`_confirm`).

The inbox authenticates the token and records its user as the decider (no `--as`); the
direct path (no `--inbox`) sends the update to Temporal itself and needs namespace rights.
"""

from __future__ import annotations

import argparse
import os
from typing import Any
from urllib.parse import quote

import httpx
from pydantic import ValidationError

from durable_tools.client.render._text import terminal_safe
from durable_tools.workflows import PendingApproval

from ._confirm import DECLINED_EXIT_CODE, can_ask, confirm, describe_request, stale
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


def _request_listed(listing: Any, run_id: str, call_id: str, digest: str | None) -> PendingApproval:
    """The request the inbox lists for `call_id` in run `run_id`, checked against `digest`.

    Raises:
        CliError: none listed, a `digest` that names another request (stale), or an entry
            that is not a pending approval.
    """
    items = listing.get("pending")
    found = next(
        (
            item
            for item in (items if isinstance(items, list) else [])
            if isinstance(item, dict)
            and item.get("run_id") == run_id
            and item.get("call_id") == call_id
        ),
        None,
    )
    if found is None:
        raise CliError(
            f"the inbox lists no approval pending for call "
            f"{terminal_safe(call_id)} in run {terminal_safe(run_id)}"
        )
    try:
        approval = PendingApproval.model_validate(found)
    except ValidationError:
        raise CliError("the inbox listed a request that is not a pending approval") from None
    if digest is not None and approval.arguments_hash != digest:
        raise stale(run_id, call_id)
    return approval


async def decide_via_inbox(args: argparse.Namespace, digest: str | None) -> int:
    """Look the request up in the inbox's pending list, show it, then decide it with its hash.

    Args:
        args: The `approve`/`deny` arguments.
        digest: The `--hash` given (checked), or None: then the person confirms the request
            shown at the terminal, or, with none, a denial goes ahead on it (the caller
            refused an approval without a terminal).
    """
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
            # Only this run, and every call of it (not only those this user may decide):
            # the inbox still refuses a decision the user may not make.
            listed = await http.get("/api/pending", params={"run": args.run_id, "all": "1"})
            if listed.status_code != 200:
                raise CliError(f"the inbox at {base} refused the listing: {_error(listed)}")
            listing = listed.json()
            if not isinstance(listing, dict):
                raise CliError(f"the inbox at {base} answered the listing with no object")
            approval = _request_listed(listing, args.run_id, args.call_id, digest)
            user = terminal_safe(str(listing.get("user")))
            echo(f"to {verb} as {user}:\n{describe_request(args.run_id, approval)}", flush=True)
            if digest is None and can_ask() and not confirm(verb):
                raise CliError(
                    f"nothing decided: call {terminal_safe(args.call_id)} of run "
                    f"{terminal_safe(args.run_id)} still waits",
                    exit_code=DECLINED_EXIT_CODE,
                )
            answer = await http.post(
                # Each id in one path segment: a call id is the model's (`s1/1`, `c?x`).
                f"/api/runs/{quote(args.run_id, safe='')}/calls/{quote(args.call_id, safe='')}"
                "/decide",
                json={
                    "approve": args.approve,
                    "reason": args.reason,
                    "arguments_hash": approval.arguments_hash,
                },
            )
    except httpx.HTTPError as error:
        raise CliError(f"cannot reach the inbox at {base}: {type(error).__name__}") from None
    if answer.status_code != 200:
        raise CliError(f"not decided: {terminal_safe(_error(answer))}")
    echo(f"{answer.json()['verdict']}: call {terminal_safe(args.call_id)} of run {args.run_id}")
    return 0
