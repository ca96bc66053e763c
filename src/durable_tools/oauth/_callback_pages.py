"""The pages the OAuth callback answers with: plain HTML, every value escaped."""

from __future__ import annotations

import html
from dataclasses import dataclass

from durable_tools.protocol._resume import reissue_command

from ._delivery import Outcome
from ._records import AuthorizationFailure, CompletedAuthorization, PendingAuthorization

__all__ = [
    "NOT_TOLD",
    "HttpResponse",
    "expired_page",
    "failure_page",
    "granted_page",
    "outcome_page",
    "page",
]

NOT_TOLD = (
    "The run could not be told yet (Temporal did not answer); it will be told as soon as "
    "Temporal answers. Reload this page to try again now."
)


@dataclass(frozen=True)
class HttpResponse:
    """What the app answers."""

    status: int
    body: str
    content_type: str = "text/html; charset=utf-8"


def page(status: int, title: str, message: str) -> HttpResponse:
    """A minimal HTML page: the title as heading, the message as its one paragraph."""
    body = (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title></head>"
        "<body style='font-family:sans-serif;max-width:40em;margin:4em auto'>"
        f"<h1>{html.escape(title)}</h1><p>{html.escape(message)}</p></body></html>"
    )
    return HttpResponse(status, body)


def granted_page(done: CompletedAuthorization, told: bool) -> HttpResponse:
    """Access granted; `told`: whether the run heard of it yet."""
    if told:
        return page(
            200,
            "Authorization complete",
            f"Access to {done.provider} was granted. You can close this tab.",
        )
    return page(
        503,
        "Run not notified yet",
        f"Access to {done.provider} was granted and saved. {NOT_TOLD}",
    )


def failure_page(failure: AuthorizationFailure, told: bool) -> HttpResponse:
    """The provider refused or failed; `told`: whether the run heard of it yet."""
    reason = "access was denied" if failure.error == "access_denied" else f"error {failure.error}"
    detail = f" ({failure.description})" if failure.description else ""
    after = "The run was told; you can close this tab." if told else NOT_TOLD
    return page(
        400, "Authorization not granted", f"{failure.provider} reported {reason}{detail}. {after}"
    )


def expired_page(pending: PendingAuthorization) -> HttpResponse:
    """A late click on an expired link: how to get a new one."""
    # The run is not told: it keeps waiting (until its own deadline, by its policy), and a
    # fresh link completes it. Telling it would end a wait a re-issued link may still serve.
    command = reissue_command(pending.workflow_id, pending.call_id)
    return page(
        410,
        "This authorization link expired",
        f"The link to grant access to {pending.provider} for run {pending.workflow_id} "
        f"(call {pending.call_id}) expired; nothing was granted. Ask for a new link with "
        f"`{command}` (or from the approvals inbox), then open the new link.",
    )


def outcome_page(outcome: Outcome, told: bool) -> HttpResponse:
    """The page for a stored outcome, granted or failed."""
    if isinstance(outcome, CompletedAuthorization):
        return granted_page(outcome, told)
    return failure_page(outcome, told)
