"""The notification activity: a signed webhook or a Slack-compatible message, sent once.

The workflow starts one activity per notification and target, without waiting for it
(`durable_tools.workflows.observe._notify`); Temporal retries it. What crosses the wire (and so
enters history) is a `NotificationRequest`: the event's facts and the target, never a
secret and never the arguments of a call; an approval carries the tool's one-line summary
of the call when it has one (built from the arguments an approver is shown, secret-marked
ones never in it). The signing secret and a Slack URL held as a
secret are resolved here, on the worker.

A webhook request carries:

- `X-Durable-Tools-Timestamp`: Unix seconds when this attempt was signed;
- `X-Durable-Tools-Signature`: `sha256=` + hex HMAC-SHA256 of `<timestamp>.<body>` with the
  target's secret;
- `X-Durable-Tools-Event` and `X-Durable-Tools-Delivery` (the same for every retry of one
  notification, for receivers that drop duplicates).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Literal

import httpx
from pydantic import BaseModel, Field
from temporalio import activity
from temporalio.exceptions import ApplicationError

from durable_tools._activities._runtime import ToolRuntime

__all__ = [
    "DELIVERY_HEADER",
    "EVENT_HEADER",
    "NOTIFY_ACTIVITY",
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "Notification",
    "NotificationRequest",
    "notify_activity",
    "sign",
]

NOTIFY_ACTIVITY = "durable_tools.notify"
SIGNATURE_HEADER = "X-Durable-Tools-Signature"
TIMESTAMP_HEADER = "X-Durable-Tools-Timestamp"
EVENT_HEADER = "X-Durable-Tools-Event"
DELIVERY_HEADER = "X-Durable-Tools-Delivery"
REQUEST_TIMEOUT = 10.0
"""Seconds one delivery attempt may take."""


class Notification(BaseModel):
    """What a receiver is told (the webhook body). Never the call's arguments."""

    event: str
    delivery: str
    """Unique per notification and target; the same for each retry."""
    run_id: str
    agent: str
    call_id: str
    tool: str
    at: datetime
    arguments_hash: str | None = None
    """sha256 of the call's arguments: what a decision binds itself to."""
    deciders: list[str] = Field(default_factory=list)
    deadline: datetime | None = None
    decider: str | None = None
    approved: bool | None = None
    provider: str | None = None
    """For authorizations: the OAuth provider."""
    link_expires_at: datetime | None = None
    summary: str | None = None
    """For approvals: what the call does, in the tool's words (`approval_summary`)."""
    inbox_url: str | None = None
    """Where a person acts on it, when the agent names an inbox."""


class NotificationRequest(BaseModel):
    """Input of the notification activity: one notification for one target."""

    notification: Notification
    kind: Literal["webhook", "slack"]
    """A signed JSON webhook, or a Slack-compatible incoming webhook."""
    url: str | None = None
    """Where to send it, unless `secret` names the URL (Slack URLs are secrets)."""
    secret: str | None = None
    """Name of the worker-side secret: the signing secret of a webhook, the URL of a Slack
    target given by `url_secret`. Never the value."""


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The signature header's value: `sha256=<hex HMAC-SHA256 of "timestamp.body">`."""
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def _resolve(name: str, secrets: Mapping[str, str], what: str) -> str:
    value = secrets.get(name) or secrets.get(name.lower()) or os.environ.get(name)
    if not value:
        raise ApplicationError(
            f"no {what} named {name!r} on this worker: give the worker a secret of that name "
            "or set the environment variable",
            type="NotificationNotConfigured",
            non_retryable=True,
        )
    return value


def _slack_message(note: Notification) -> dict[str, Any]:
    what = {
        "approval.requested": "needs approval",
        "approval.decided": "was " + ("approved" if note.approved else "denied"),
        "approval.escalated": "was escalated",
        "approval.expired": "expired without a decision",
        "authorization.requested": f"needs an authorization at {note.provider}",
        "authorization.expired": f"authorization at {note.provider} expired",
        "input.requested": "asks the user a question (its MCP server's)",
        "input.expired": "got no answer to its question in time",
        "callback.published": "waits for a client to run it",
        "callback.expired": "was not run by a client in time",
    }.get(note.event, note.event)
    # Every name is escaped, not only the summary: the call id is the model's (a model can
    # name a call `<https://evil.example|Open the inbox>`), a decider's name is whatever
    # the operator who decided typed.
    text = _slack_escape(
        f"{note.agent}: `{note.tool}` (call {note.call_id}, run {note.run_id}) {what}"
    )
    if note.summary:
        text += f": {_slack_escape(note.summary)}"
    if note.decider:
        text += f" by {_slack_escape(note.decider)}"
    if note.deciders:
        text += f"; deciders: {_slack_escape(', '.join(note.deciders))}"
    if note.deadline:
        text += f"; deadline {note.deadline.isoformat(timespec='seconds')}"
    blocks: list[dict[str, Any]] = [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]
    if note.inbox_url:
        text += f" <{note.inbox_url}|Open the inbox>"
        blocks.append(
            {
                "type": "actions",
                "elements": [
                    {
                        "type": "button",
                        "text": {"type": "plain_text", "text": "Open the inbox"},
                        "url": note.inbox_url,
                    }
                ],
            }
        )
    return {"text": text, "blocks": blocks}


def _slack_escape(text: str) -> str:
    """Text Slack shows as written: `<url|label>` in an argument must not become a link,
    nor `<!channel>` a mention (Slack's own escaping: &, < and >)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _fail_on(response: httpx.Response, url: str) -> None:
    status = response.status_code
    if status < 300:
        return
    host = httpx.URL(url).host
    message = f"the receiver at {host} answered {status}"
    # A 4xx other than timeout or throttling will answer the same to a retry.
    permanent = 400 <= status < 500 and status not in (408, 425, 429)
    raise ApplicationError(message, type="NotificationRefused", non_retryable=permanent)


def notify_activity(runtime: ToolRuntime) -> Callable[..., Any]:
    """The notification activity bound to a worker's secrets."""

    @activity.defn(name=NOTIFY_ACTIVITY)
    async def notify(request: NotificationRequest) -> None:
        note = request.notification
        headers = {"User-Agent": "durable-tools", EVENT_HEADER: note.event}
        if request.kind == "webhook":
            url = request.url or ""
            secret = _resolve(request.secret or "", runtime.secrets, "webhook secret")
            body = note.model_dump_json().encode()
            timestamp = str(int(time.time()))
            headers |= {
                "Content-Type": "application/json",
                TIMESTAMP_HEADER: timestamp,
                SIGNATURE_HEADER: sign(secret, timestamp, body),
                DELIVERY_HEADER: note.delivery,
            }
        else:
            url = request.url or _resolve(request.secret or "", runtime.secrets, "Slack URL")
            body = json.dumps(_slack_message(note)).encode()
            headers["Content-Type"] = "application/json"
        try:
            async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT) as http:
                response = await http.post(url, content=body, headers=headers)
        except httpx.HTTPError as error:
            # The type says enough; the message may quote a URL that is a secret (Slack).
            raise ApplicationError(
                f"could not reach the receiver: {type(error).__name__}", type="NotificationFailed"
            ) from None
        _fail_on(response, url)

    return notify
