"""Slack messages say in words what each wait needs, for every kind of wait."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from durable_tools._activities._notify import Notification, _slack_message


@pytest.mark.parametrize(
    ("event", "words"),
    [
        ("approval.requested", "needs approval"),
        ("input.requested", "asks the user a question"),
        ("input.expired", "no answer"),
        ("callback.published", "waits for a client"),
        ("callback.expired", "not run by a client"),
    ],
)
def test_each_wait_is_said_in_words(event: str, words: str) -> None:
    note = Notification(
        event=event,
        delivery="d1",
        run_id="run-1",
        agent="billing",
        call_id="c1",
        tool="refund",
        at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    text = _slack_message(note)["text"]
    assert words in text and event not in text
