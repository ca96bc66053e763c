"""Turning whatever a tool raised into one classified `ToolError`, once.

The rule of thumb: an unknown failure is transient until proven otherwise (retry),
while failures that another attempt cannot fix (a 4xx, a validation error inside the
tool, a missing file) go back to the model with a message it can act on.
"""

from __future__ import annotations

import asyncio
import errno
import math
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from pydantic import ValidationError

from ._context import MissingResource
from ._errors import (
    Cancelled,
    ToolError,
    ToolExecutionError,
    ToolTimeout,
)
from ._scrub import display_url
from ._spec import RetrySpec

__all__ = [
    "apply_retry_spec",
    "classify_exception",
    "parse_retry_after",
]

# errno values that mean "the network hiccupped", worth another attempt.
_NETWORK_ERRNOS = frozenset(
    {
        errno.ECONNREFUSED,
        errno.ECONNRESET,
        errno.ECONNABORTED,
        errno.ETIMEDOUT,
        errno.EHOSTUNREACH,
        errno.ENETUNREACH,
        errno.ENETDOWN,
        errno.ENETRESET,
        errno.EPIPE,
        errno.EAGAIN,
    }
)
# Exception class names of HTTP client libraries (httpx, requests, aiohttp), matched by
# name so the tool layer depends on none of them.
_TIMEOUT_NAMES = frozenset({"TimeoutException", "Timeout", "ServerTimeoutError"})
_TRANSPORT_NAMES = frozenset(
    {
        "TransportError",
        "NetworkError",
        "ConnectError",
        "ConnectionError",
        "ClientConnectionError",
        "RemoteProtocolError",
    }
)
# A wrong path or permission is the model's (or user's) to fix: retrying cannot help.
_PERMANENT_OS_ERRORS = (
    FileNotFoundError,
    FileExistsError,
    PermissionError,
    IsADirectoryError,
    NotADirectoryError,
)


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait from an HTTP `Retry-After` value.

    Args:
        value: Delay-seconds (`"120"`) or an HTTP date (`"Wed, 21 Oct 2015 07:28:00 GMT"`).
        now: The current time, for dates; defaults to the wall clock.

    Returns:
        Non-negative seconds, or None when the value is absent or unreadable.
    """
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if math.isfinite(seconds) else None
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = now or datetime.now(UTC)
    return max(0.0, (when - current).total_seconds())


def _header(headers: Any, name: str) -> str | None:
    if headers is None:
        return None
    getter = getattr(headers, "get", None)
    if getter is not None:
        found = getter(name)
        if found is not None:
            return str(found)
    if isinstance(headers, Mapping):
        for key, value in headers.items():
            if str(key).lower() == name.lower():
                return str(value)
    return None


def _mro_names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def _status_code(exc: BaseException) -> tuple[int, Any] | None:
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    if isinstance(status, int) and not isinstance(status, bool):
        return status, response
    return None


def classify_exception(exc: BaseException) -> ToolError:
    """Map any exception a tool raised to the error taxonomy.

    Args:
        exc: The exception.

    Returns:
        `exc` itself if it is a `ToolError`, else a new classified error whose
        `details["exception_type"]` names the original type.
    """
    if isinstance(exc, ToolError):
        return exc
    kind = type(exc).__name__
    details: dict[str, Any] = {"exception_type": kind}
    text = str(exc) or kind
    if isinstance(exc, asyncio.CancelledError):
        return Cancelled("the call was cancelled", details=details)
    if isinstance(exc, MissingResource):
        return ToolExecutionError(
            f"the worker is missing something this tool needs: {text}",
            retryable=False,
            details=details,
        )
    if getattr(exc, "non_retryable", False) is True and "ApplicationError" in _mro_names(exc):
        # Temporal's own error, raised by a tool that said it must not be repeated.
        return ToolExecutionError(f"{kind}: {text}", retryable=False, details=details)
    http = _status_code(exc)
    if http is not None:
        status, response = http
        details["status_code"] = status
        url = getattr(getattr(response, "request", None), "url", None) or getattr(
            response, "url", None
        )
        if url is not None:
            details["url"] = display_url(str(url), query=False)  # no key or password
        if status == 429 or status >= 500:
            retry_after = parse_retry_after(
                _header(getattr(response, "headers", None), "Retry-After")
            )
            return ToolExecutionError(
                f"the service answered HTTP {status}; try again later",
                retryable=True,
                retry_after=retry_after,
                details=details,
            )
        return ToolExecutionError(
            f"the service refused the request with HTTP {status}: {text}",
            retryable=False,
            details=details,
        )
    names = _mro_names(exc)
    if isinstance(exc, TimeoutError) or names & _TIMEOUT_NAMES:
        return ToolTimeout(f"the tool timed out: {text}", retryable=True, details=details)
    if isinstance(exc, ValidationError):
        details["errors"] = [
            f"{'.'.join(str(p) for p in e['loc']) or '$'}: {e['msg']}" for e in exc.errors()
        ]
        return ToolExecutionError(
            f"the tool rejected a value ({exc.error_count()} validation errors): "
            f"{details['errors'][0] if details['errors'] else text}",
            retryable=False,
            details=details,
        )
    if isinstance(exc, ConnectionError) or names & _TRANSPORT_NAMES:
        return ToolExecutionError(f"network error: {text}", retryable=True, details=details)
    if isinstance(exc, _PERMANENT_OS_ERRORS):
        return ToolExecutionError(f"{kind}: {text}", retryable=False, details=details)
    if isinstance(exc, OSError):
        if exc.errno is not None:
            details["errno"] = exc.errno
        network = exc.errno in _NETWORK_ERRNOS or "gaierror" in names
        return ToolExecutionError(
            f"{'network error' if network else kind}: {text}", retryable=True, details=details
        )
    return ToolExecutionError(f"{kind}: {text}", retryable=True, details=details)


def _error_names(error: ToolError, cause: BaseException | None) -> set[str]:
    names = {error.kind.value, *_mro_names(error)}
    if cause is not None:
        names |= _mro_names(cause)
    original = error.details.get("exception_type")
    if isinstance(original, str):
        names.add(original)
    return names - {"object", "BaseException", "Exception"}


def apply_retry_spec(error: ToolError, retry: RetrySpec, cause: BaseException | None) -> bool:
    """Whether `error` may be retried under the tool's `non_retryable_errors`/`retry_on`.

    An error is named by its `ErrorKind` value, its class and base classes, and those of
    the exception it was classified from (`cause`), so `retry_on=["ConnectionError"]`
    also retries a `ConnectionResetError`. A retryable error is only ever made final here,
    never the reverse: a list cannot make an invalid-arguments error worth repeating.

    Args:
        error: The classified error.
        retry: The tool's retry spec.
        cause: The exception the tool raised, when `error` was classified from it.
    """
    if not error.retryable:
        return False
    names = _error_names(error, cause)
    if names & set(retry.non_retryable_errors):
        return False
    return retry.retry_on is None or bool(names & set(retry.retry_on))
