"""Classifying exceptions and telling the model what happened."""

from __future__ import annotations

import asyncio
import errno
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import BaseModel
from temporalio.exceptions import ApplicationError

from durable_tools import (
    Cancelled,
    Denied,
    InvalidArguments,
    ToolError,
    ToolExecutionError,
    ToolNotFound,
    ToolTimeout,
)
from durable_tools.tools import ErrorKind, MissingResource
from durable_tools.tools._classify import classify_exception, parse_retry_after
from durable_tools.tools._errors import error_message_for_model

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


class FakeResponse:
    def __init__(self, status_code: int, headers: dict[str, str] | None = None) -> None:
        self.status_code = status_code
        self.headers = headers or {}
        self.url = "https://api.example.com/x"


class HTTPStatusError(Exception):
    """Shaped like httpx.HTTPStatusError: the response is on the exception."""

    def __init__(self, response: FakeResponse) -> None:
        super().__init__(f"status {response.status_code}")
        self.response = response


class TimeoutException(Exception):
    """Named like httpx.TimeoutException (not a TimeoutError subclass)."""


class ConnectError(Exception):
    """Named like httpx.ConnectError."""


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("120", 120.0),
        (" 1.5 ", 1.5),
        ("-3", 0.0),
        ("Thu, 01 Jan 2026 12:00:30 GMT", 30.0),
        ("Thu, 01 Jan 2026 11:00:00 GMT", 0.0),  # in the past
        ("soon", None),
        ("", None),
        (None, None),
        ("inf", None),
    ],
)
def test_parse_retry_after(value: str | None, expected: float | None) -> None:
    assert parse_retry_after(value, now=NOW) == expected


def test_tool_errors_pass_through() -> None:
    error = Denied("no")
    assert classify_exception(error) is error


# asyncio.TimeoutError is the builtin TimeoutError since Python 3.11.
@pytest.mark.parametrize("exc", [TimeoutError("slow"), TimeoutException()])
def test_timeouts_are_retryable(exc: Exception) -> None:
    error = classify_exception(exc)
    assert isinstance(error, ToolTimeout)
    assert error.retryable
    assert error.details["exception_type"] == type(exc).__name__


@pytest.mark.parametrize(
    "exc",
    [
        ConnectionResetError("reset"),
        ConnectError("refused"),
        OSError(errno.ENETUNREACH, "unreachable"),
    ],
)
def test_network_errors_are_retryable(exc: Exception) -> None:
    error = classify_exception(exc)
    assert type(error) is ToolExecutionError and error.retryable


@pytest.mark.parametrize(
    ("status", "headers", "retry_after"),
    [(429, {"Retry-After": "7"}, 7.0), (503, {"retry-after": "2"}, 2.0), (500, {}, None)],
)
def test_http_429_and_5xx_are_retryable_with_retry_after(
    status: int, headers: dict[str, str], retry_after: float | None
) -> None:
    error = classify_exception(HTTPStatusError(FakeResponse(status, headers)))
    assert error.retryable
    assert error.retry_after == retry_after
    assert error.details["status_code"] == status
    assert error.details["url"] == "https://api.example.com/x"


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_other_4xx_go_to_the_model(status: int) -> None:
    error = classify_exception(HTTPStatusError(FakeResponse(status)))
    assert not error.retryable
    assert f"HTTP {status}" in error.message


def test_pydantic_validation_inside_the_tool_is_not_retryable() -> None:
    class Model(BaseModel):
        n: int

    try:
        Model.model_validate({"n": "x"})
    except Exception as exc:
        error = classify_exception(exc)
    assert not error.retryable
    assert error.details["errors"][0].startswith("n: ")


@pytest.mark.parametrize(
    ("exc", "retryable"),
    [
        (FileNotFoundError(2, "No such file", "/x"), False),
        (PermissionError("denied"), False),
        (MissingResource("worker has no resource named 'db'"), False),
        (ValueError("weird"), True),  # unknown: transient until proven otherwise
        (RuntimeError("boom"), True),
    ],
)
def test_other_exceptions(exc: Exception, retryable: bool) -> None:
    error = classify_exception(exc)
    assert isinstance(error, ToolExecutionError)
    assert error.retryable is retryable
    assert error.details["exception_type"] == type(exc).__name__


def test_cancellation_is_classified() -> None:
    error = classify_exception(asyncio.CancelledError())
    assert isinstance(error, Cancelled) and not error.retryable


@pytest.mark.parametrize(
    ("error", "fragments"),
    [
        (
            InvalidArguments("bad", errors=["$.city: 3 is not of type 'string'"]),
            ["call_1", "- $.city: 3 is not of type 'string'", "Fix the arguments and call"],
        ),
        (
            ToolNotFound("no tool"),
            ["call_1", "no tool of that name", "Available tools: a, b"],
        ),
        (Denied("the user said no"), ["denied: the user said no", "Do not repeat"]),
        (ToolTimeout("too slow", retryable=True), ["timed out"]),
        (ToolExecutionError("HTTP 404", retryable=False), ["failed: HTTP 404", "will fail again"]),
        (ToolExecutionError("flaky", retryable=True), ["call it again later"]),
    ],
)
def test_error_message_for_model_keeps_the_call_id_and_says_what_to_do(
    error: ToolError, fragments: list[str]
) -> None:
    message = error_message_for_model("call_1", "weather", error, available=["a", "b"])
    assert message.startswith("Tool call call_1 to 'weather'")
    for fragment in fragments:
        assert fragment in message


def test_error_kinds_are_stable() -> None:
    errors: list[Any] = [ToolTimeout("x"), ToolNotFound("x"), InvalidArguments("x")]
    assert [e.kind for e in errors] == [
        ErrorKind.TIMEOUT,
        ErrorKind.NOT_FOUND,
        ErrorKind.INVALID_ARGUMENTS,
    ]


def test_temporals_non_retryable_application_error_is_final() -> None:
    final = classify_exception(ApplicationError("the contract is void", non_retryable=True))
    assert not final.is_retryable() and "the contract is void" in final.message
    assert classify_exception(ApplicationError("flaky")).is_retryable()


def test_an_http_errors_url_is_kept_without_its_credentials() -> None:
    response = FakeResponse(500)
    response.url = "https://u:hunter2-pw@api.example.com/x?api_key=hunter2-key"
    error = classify_exception(HTTPStatusError(response))
    assert error.details["url"] == "https://api.example.com/x"
