"""Who hears about a run's waits (approvals, authorizations, questions for the user,
callback calls): webhook and Slack targets."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from durable_tools._durations import Seconds

__all__ = ["NotificationConfig", "NotificationEvent", "SlackTarget", "WebhookTarget"]


NotificationEvent = Literal[
    "approval.requested",
    "approval.decided",
    "approval.escalated",
    "approval.expired",
    "authorization.requested",
    "authorization.expired",
    "input.requested",
    "input.expired",
    "callback.published",
    "callback.expired",
]
"""What a notification can be about."""


def _http_url(url: str) -> str:
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"a notification URL must be http:// or https://, got {url[:40]!r}")
    return url


class WebhookTarget(BaseModel):
    """A webhook that receives signed JSON notifications.

    The HMAC secret is never part of the config (the config is recorded in history): it is
    named here and resolved on the worker that sends the notification.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str = Field(max_length=2000)
    events: tuple[NotificationEvent, ...] = ()
    """Events this target receives; empty means all of them."""
    secret: str = Field(default="DURABLE_TOOLS_WEBHOOK_SECRET", min_length=1, max_length=200)
    """Name of the signing secret on the worker: a worker secret of that name (see
    `build_worker(secrets=...)`), else the environment variable of that name. A worker
    without it fails the notification (recorded as `notification.failed`) rather than
    sending it unsigned."""

    @model_validator(mode="after")
    def _check_url(self) -> WebhookTarget:
        _http_url(self.url)
        return self


class SlackTarget(BaseModel):
    """A Slack-compatible incoming webhook: `{"text": ..., "blocks": [...]}` with a link to
    the inbox. An incoming-webhook URL is itself a secret: name it with `url_secret`
    (resolved on the worker like `WebhookTarget.secret`); `url` is for local receivers."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str | None = Field(default=None, max_length=2000)
    url_secret: str | None = Field(default=None, min_length=1, max_length=200)
    events: tuple[NotificationEvent, ...] = ()
    """Events this target receives; empty means all of them."""

    @model_validator(mode="after")
    def _one_url(self) -> SlackTarget:
        if (self.url is None) == (self.url_secret is None):
            raise ValueError("a Slack target needs exactly one of url and url_secret")
        if self.url is not None:
            _http_url(self.url)
        return self


class NotificationConfig(BaseModel):
    """Who hears about approvals and authorizations of an agent's runs.

    Each notification is an activity the run starts without waiting for it, retried by
    Temporal: a slow or failing receiver never blocks or fails the run. One that fails for
    good is recorded as a `notification.failed` event.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    webhooks: tuple[WebhookTarget, ...] = ()
    slack: tuple[SlackTarget, ...] = ()
    inbox_url: str | None = Field(default=None, max_length=2000)
    """Base URL of the approvals inbox; notifications link to `<inbox_url>/runs/<run id>`."""
    max_attempts: int = Field(default=5, ge=1, le=100)
    """Deliveries tried per notification and target."""
    timeout_seconds: Seconds = 600.0
    """How long one notification may keep retrying before it counts as failed."""
    retry_interval_seconds: Seconds = 2.0
    """First pause between two attempts; doubled after each one, up to a minute."""
