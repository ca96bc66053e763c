"""Notifications on a real dev server, to real HTTP receivers on 127.0.0.1.

A webhook receives `approval.requested` and `approval.decided`, signed with HMAC-SHA256
over `timestamp.body` (verified here the way the docs tell receivers to); a receiver that
always answers 500 neither blocks nor fails the run, and the run records
`notification.failed`.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from durable_tools import (
    AgentConfig,
    DurableTools,
    NotificationConfig,
    RunStatus,
    SlackTarget,
    ToolRegistry,
    WebhookTarget,
)
from durable_tools._activities import NOTIFY_ACTIVITY
from support import (
    answer,
    assert_not_wedged,
    calls,
    running_worker,
    scheduled_activities,
    wait_for,
    write_script,
)
from webhook_support import Received, Receiver, webhook_receiver

SECRET = "whsec-test-5a1f"  # a worker secret: must never reach history


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with webhook_receiver() as state:
        yield state


def verify(secret: str, received: Received) -> dict[str, Any]:
    """What a receiver does (the snippet in docs/notifications.md)."""
    timestamp = received.headers["X-Durable-Tools-Timestamp"]
    signature = received.headers["X-Durable-Tools-Signature"]
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + received.body, hashlib.sha256)
    if not hmac.compare_digest("sha256=" + mac.hexdigest(), signature):
        raise ValueError("bad signature")
    payload: dict[str, Any] = json.loads(received.body)
    return payload


def refund_registry() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(approval=True, idempotent=True, redact=("card",))
    def refund(order_id: str, card: str) -> str:
        """Refund an order."""
        return f"refunded {order_id}"

    return registry


def script(tmp_path: Path) -> str:
    return write_script(
        tmp_path,
        [calls(("r1", "refund", {"order_id": "A1", "card": "4242-secret"})), answer("done")],
    )


async def test_webhook_and_slack_receive_signed_requested_and_decided(
    client: Client, task_queue: str, tmp_path: Path, receiver: Receiver
):
    config = AgentConfig(
        model=script(tmp_path),
        name="refunds",
        notifications=NotificationConfig(
            webhooks=(WebhookTarget(url=receiver.url + "/hook", secret="webhook"),),
            slack=(SlackTarget(url=receiver.url + "/slack", events=("approval.requested",)),),
            inbox_url="http://inbox.example/",
        ),
    )
    async with running_worker(client, refund_registry(), task_queue, secrets={"webhook": SECRET}):
        dt = DurableTools(client, task_queue)
        run = await dt.start("refund A1", config=config)
        await wait_for(run, lambda s: bool(s.pending_approvals))
        await wait_for_requests(receiver, lambda: receiver.events() == ["approval.requested"])
        await run.approve("r1", decider="alice")
        result = await run.result()
        await wait_for_requests(receiver, lambda: len(receiver.events()) == 2)
        await assert_not_wedged(run.handle)
        history = await run.handle.fetch_history()

    assert result.status is RunStatus.COMPLETED
    hooks = [r for r in receiver.requests if r.path == "/hook"]
    requested, decided = (verify(SECRET, r) for r in hooks)
    assert requested["event"] == "approval.requested"
    assert requested["run_id"] == run.run_id
    assert requested["call_id"] == "r1"
    assert requested["tool"] == "refund"
    assert len(requested["arguments_hash"]) == 64
    assert requested["inbox_url"] == f"http://inbox.example/runs/{run.run_id}"
    assert decided["event"] == "approval.decided"
    assert decided["decider"] == "alice"
    assert decided["approved"] is True
    assert requested["delivery"] != decided["delivery"]
    # Argument values never leave the run in a notification.
    assert all(b"4242-secret" not in r.body and b"A1" not in r.body for r in receiver.requests)
    # A tampered body fails verification.
    with pytest.raises(ValueError):
        verify(SECRET, Received("/hook", hooks[0].headers, hooks[0].body + b" "))
    # Slack got only the event it asked for, as an incoming-webhook message with the link.
    slack = [json.loads(r.body) for r in receiver.requests if r.path == "/slack"]
    assert len(slack) == 1
    assert "refund" in slack[0]["text"] and "needs approval" in slack[0]["text"]
    button = slack[0]["blocks"][-1]["elements"][0]
    assert button["url"] == f"http://inbox.example/runs/{run.run_id}"
    # The secret is resolved on the worker: never in history.
    assert SECRET.encode() not in history.to_json().encode()
    assert scheduled_activities(history).count(NOTIFY_ACTIVITY) == 3


async def test_failing_receiver_never_blocks_or_fails_the_run(
    client: Client, task_queue: str, tmp_path: Path, receiver: Receiver
):
    receiver.status = 500
    config = AgentConfig(
        model=script(tmp_path),
        notifications=NotificationConfig(
            webhooks=(WebhookTarget(url=receiver.url + "/hook", secret="webhook"),),
            max_attempts=2,
            retry_interval_seconds=0.1,
        ),
    )
    async with running_worker(client, refund_registry(), task_queue, secrets={"webhook": SECRET}):
        dt = DurableTools(client, task_queue)
        run = await dt.start("refund A1", config=config)
        await wait_for(run, lambda s: bool(s.pending_approvals))
        # The request notification fails for good while the run waits for its decision.
        await wait_for_events(run, "notification.failed")
        await run.approve("r1", decider="alice")
        result = await run.result()
        await assert_not_wedged(run.handle)
        events = await run.events()

    assert result.status is RunStatus.COMPLETED
    assert len(receiver.events()) >= 2  # retried by Temporal
    failed = [e for e in events if e.event == "notification.failed"]
    assert failed[0].call_id == "r1"
    assert "approval.requested" in (failed[0].detail or "")
    assert "500" in (failed[0].detail or "")


async def test_missing_secret_fails_the_notification_not_the_run(
    client: Client, task_queue: str, tmp_path: Path, receiver: Receiver
):
    config = AgentConfig(
        model=script(tmp_path),
        notifications=NotificationConfig(
            webhooks=(WebhookTarget(url=receiver.url + "/hook", secret="NO_SUCH_SECRET_XYZ"),),
        ),
    )
    async with running_worker(client, refund_registry(), task_queue):
        dt = DurableTools(client, task_queue)
        run = await dt.start("refund A1", config=config)
        await wait_for_events(run, "notification.failed")
        await run.approve("r1", decider="alice")
        result = await run.result()
        await assert_not_wedged(run.handle)
        events = await run.events()
    assert result.status is RunStatus.COMPLETED
    assert receiver.requests == []  # never sent unsigned
    detail = next(e.detail for e in events if e.event == "notification.failed")
    assert "NO_SUCH_SECRET_XYZ" in (detail or "")


def test_slack_target_needs_exactly_one_url():
    with pytest.raises(ValueError):
        SlackTarget()
    with pytest.raises(ValueError):
        SlackTarget(url="http://a.example", url_secret="slack")
    with pytest.raises(ValueError):
        WebhookTarget(url="file:///etc/passwd")


async def wait_for_requests(receiver: Receiver, check: Any, timeout: float = 15) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"the receiver got {receiver.events()}")
        await asyncio.sleep(0.05)


async def wait_for_events(run: Any, name: str, timeout: float = 20) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        events = await run.events()
        if any(e.event == name for e in events):
            return
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"no {name} in {[e.event for e in events]}")
        await asyncio.sleep(0.1)
