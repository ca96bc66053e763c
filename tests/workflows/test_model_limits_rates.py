"""A rate under one call a window is kept (found while attacking `worker --model-limit`).

`ModelLimits.requests_per_window` rounds down but never below one call, so 0.5 requests a
minute over the default 60 s window books one call a minute: twice the rate asked, the
unsafe direction for a provider's limit (`--model-limit SPEC=0.5` is the CLI's own example).
Left to the limiter's owners (protocol `_models.book` and the limiter are being changed):
marked xfail(strict=True) until it holds.
"""

from __future__ import annotations

import pytest

from durable_tools.protocol._models import LimitedCall, ReserveRequest, book
from durable_tools.worker import ModelLimits


@pytest.mark.xfail(
    strict=True,
    reason="requests_per_window is at least 1: 0.5 a minute books 1 a minute (limiter's area)",
)
def test_half_a_call_a_minute_books_one_call_every_two_minutes() -> None:
    limits = ModelLimits(requests_per_minute=0.5)
    calls: list[LimitedCall] = []
    starts = []
    for _ in range(4):
        reservation = book(calls, 0.0, ReserveRequest(limits=limits, tokens=0, max_delay=3_600))
        assert reservation.booked
        starts.append(reservation.delay)
    # Any 120 s holds at most one start.
    for start in starts:
        assert sum(1 for s in starts if start <= s < start + 120.0) <= 1, starts
