"""Notifications from the workflow: started, never awaited in the call path.

`notify(state, event, ...)` is a one-line call at each point worth telling a person about
(an approval requested, decided, escalated or expired; an authorization, a question for
the user or a callback call requested or expired: `notify_wait`). For each configured
target it starts the notification activity in a background task: the run goes on at once,
Temporal retries a failing receiver, and a notification that fails for good becomes a
`notification.failed` event. Nothing here can fail the run.

Without `AgentConfig.notifications` nothing is scheduled, so recorded histories replay
unchanged. Tasks still running when the run ends are abandoned with it (the server drops
their activities); one in flight may still be delivered.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Protocol
from urllib.parse import quote

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

from durable_tools._activities._notify import NOTIFY_ACTIVITY, Notification, NotificationRequest
from durable_tools.protocol._types import NotificationConfig, NotificationEvent
from durable_tools.protocol._wait_types import (
    ApprovalDecision,
    PendingApproval,
    PendingAuthorization,
)
from durable_tools.workflows.observe._metrics import approval_decided, approval_requested
from durable_tools.workflows.run._state import RunState

__all__ = ["WaitingCall", "notify", "notify_approval", "notify_authorization", "notify_wait"]

_ATTEMPT_TIMEOUT = timedelta(seconds=30)
_MAX_INTERVAL = timedelta(seconds=60)


def _inbox_link(config: NotificationConfig, run_id: str) -> str | None:
    if not config.inbox_url:
        return None
    return f"{config.inbox_url.rstrip('/')}/runs/{quote(run_id, safe='')}"


def notify(
    state: RunState,
    event: NotificationEvent,
    *,
    call_id: str,
    tool: str,
    arguments_hash: str | None = None,
    deciders: list[str] | None = None,
    deadline: datetime | None = None,
    decider: str | None = None,
    approved: bool | None = None,
    provider: str | None = None,
    link_expires_at: datetime | None = None,
    summary: str | None = None,
) -> None:
    """Tell the agent's notification targets about `event`, in the background."""
    config = state.config.notifications
    if config is None:
        return
    run_id = workflow.info().workflow_id
    targets: list[NotificationRequest] = []
    note = Notification(
        event=event,
        delivery="",
        run_id=run_id,
        agent=state.config.name,
        call_id=call_id,
        tool=tool,
        at=workflow.now(),
        arguments_hash=arguments_hash,
        deciders=list(deciders or ()),
        deadline=deadline,
        decider=decider,
        approved=approved,
        provider=provider,
        link_expires_at=link_expires_at,
        summary=summary,
        inbox_url=_inbox_link(config, run_id),
    )
    for webhook in config.webhooks:
        if not webhook.events or event in webhook.events:
            targets.append(
                NotificationRequest(
                    notification=note, kind="webhook", url=webhook.url, secret=webhook.secret
                )
            )
    for slack in config.slack:
        if not slack.events or event in slack.events:
            targets.append(
                NotificationRequest(
                    notification=note, kind="slack", url=slack.url, secret=slack.url_secret
                )
            )
    for request in targets:
        state.notifications += 1
        delivery = f"{run_id}:{state.continued}:{state.notifications}"
        request.notification = note.model_copy(update={"delivery": delivery})
        task = asyncio.create_task(_send(state, config, request))
        state.notifying.add(task)
        task.add_done_callback(state.notifying.discard)


async def _send(state: RunState, config: NotificationConfig, request: NotificationRequest) -> None:
    note = request.notification
    target = request.kind
    try:
        await workflow.execute_activity(
            NOTIFY_ACTIVITY,
            request,
            schedule_to_close_timeout=timedelta(seconds=config.timeout_seconds),
            start_to_close_timeout=_ATTEMPT_TIMEOUT,
            retry_policy=RetryPolicy(
                initial_interval=timedelta(seconds=config.retry_interval_seconds),
                maximum_interval=_MAX_INTERVAL,
                maximum_attempts=config.max_attempts,
            ),
            summary=(
                f"notify {note.event} {note.call_id} ({target})"
                if state.config.activity_summaries
                else None
            ),
        )
    except ActivityError as error:
        cause = error.cause
        why = getattr(cause, "message", None) or str(cause or error)
        state.event(
            "notification.failed",
            call_id=note.call_id,
            tool=note.tool,
            detail=f"{note.event} to {target}: {why}"[:300],
        )


def notify_approval(
    state: RunState,
    event: NotificationEvent,
    pending: PendingApproval,
    decision: ApprovalDecision | None = None,
) -> None:
    """`notify` for an approval; one line at each point of the approval gate.

    A decision by `deadline` (the gate's own denial when an approval expires) is not sent
    as `approval.decided`: `approval.expired` already said it.
    """
    if decision is not None and decision.decider == "deadline":
        return
    notify(
        state,
        event,
        call_id=pending.call_id,
        tool=pending.tool,
        arguments_hash=pending.arguments_hash,
        deciders=pending.deciders,
        deadline=pending.deadline,
        decider=decision.decider if decision else None,
        approved=decision.approve if decision else None,
        summary=pending.summary,
    )


def notify_authorization(
    state: RunState, event: NotificationEvent, pending: PendingAuthorization
) -> None:
    """`notify` for an OAuth authorization wait."""
    notify(
        state,
        event,
        call_id=pending.call_id,
        tool=pending.tool,
        deadline=pending.deadline,
        provider=pending.provider,
        link_expires_at=pending.expires_at,
    )


class WaitingCall(Protocol):
    """What every kind of wait records of its call (`PendingApproval`, `PendingInput`, ...)."""

    @property
    def call_id(self) -> str: ...
    @property
    def tool(self) -> str: ...
    @property
    def deadline(self) -> datetime | None: ...


def notify_wait(
    state: RunState, event: NotificationEvent, pending: WaitingCall, answer: object = None
) -> None:
    """`notify` for a call that starts, stops or ends waiting (`answer`: what ended it),
    with what its kind adds; an approval requested or decided is counted in the metrics
    too (`_metrics`: the meter sees every one, notifications or not)."""
    if isinstance(pending, PendingApproval):
        decision = answer if isinstance(answer, ApprovalDecision) else None
        if event == "approval.requested":
            approval_requested(pending.tool)
        elif event == "approval.decided" and decision is not None:
            approval_decided(pending.tool, decision, pending.requested_at)
        notify_approval(state, event, pending, decision)
    elif isinstance(pending, PendingAuthorization):
        notify_authorization(state, event, pending)
    else:
        notify(state, event, call_id=pending.call_id, tool=pending.tool, deadline=pending.deadline)
