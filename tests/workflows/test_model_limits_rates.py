"""A rate under one call a window is kept (found while attacking `worker --model-limit`).

`ModelLimits.requests_per_window` rounds down but never below one call, so 0.5 requests a
minute over the default 60 s window booked one call a minute: twice the rate asked, the
unsafe direction for a provider's limit (`--model-limit SPEC=0.5` is the CLI's own example).
The window now widens to hold exactly one call.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from durable_tools.protocol._limiter import ReserveRequest, Window
from durable_tools.worker import ModelLimits


@pytest.mark.parametrize(
    ("limits", "span"),
    [
        (ModelLimits(requests_per_minute=0.5), 120.0),
        (ModelLimits(requests_per_minute=5, window_seconds=1), 12.0),
        (ModelLimits(tokens_per_minute=30, window_seconds=1), 2.0),
    ],
)
def test_a_rate_under_one_a_window_is_kept(limits: ModelLimits, span: float) -> None:
    window = Window([])
    starts = []
    for _ in range(4):
        tokens = 1 if limits.tokens_per_minute else 0
        reservation = window.book(
            0.0, ReserveRequest(limits=limits, tokens=tokens, max_delay=3_600)
        )
        assert reservation.booked
        starts.append(reservation.delay)
    # Any span that the rate allows one start in holds at most one.
    for start in starts:
        assert sum(1 for s in starts if start <= s < start + span) <= 1, starts


def test_a_rate_under_one_an_hour_is_refused_in_words() -> None:
    with pytest.raises(ValidationError, match="rate under one a 3600 s window"):
        ModelLimits(requests_per_minute=0.01)
