"""What the adapters built on official provider SDKs share.

The SDKs (`openai`, `anthropic`) are optional extras, imported only when an adapter is
used. Their clients are cached per event loop and configuration, so a fresh adapter per
model call (as the activity builds them) still reuses kept-alive connections. Their own
retries are always off: Temporal's retry policy is the only one, and every failure is
classified here into a `ModelError` that says whether and when to try again.
"""

from __future__ import annotations

import asyncio
import email.utils
import importlib
import importlib.util
import json
import math
import sys
import time
import weakref
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any, Protocol

from durable_tools._extras import install_hint
from durable_tools.tools._scrub import display_url

from .._http_clients import aclose_shared_clients as _aclose_http_clients
from ._errors import ModelError

__all__ = [
    "RETRYABLE_STATUSES",
    "SdkFailure",
    "aclose_shared_clients",
    "cached_client",
    "display_url",
    "excerpt",
    "int_field",
    "load_sdk",
    "parse_retry_after",
    "provider_message",
    "require_sdk",
    "sdk_failure",
]

# Request timeout, lock conflict, rate limit (and every 5xx, 529 "overloaded" included):
# the statuses the SDKs themselves would retry. Every other 4xx fails the same way again.
RETRYABLE_STATUSES = frozenset({408, 409, 429})

# Provider error bodies can be whole HTML pages from a proxy; operators need the gist.
_MAX_PROVIDER_MESSAGE = 1000

# What providers say when the conversation no longer fits the model's context window:
# OpenAI's `context_length_exceeded`, Anthropic's "prompt is too long", vLLM's wording.
_CONTEXT_MARKERS = (
    "context_length_exceeded",
    "context length",
    "context window",
    "prompt is too long",
    "maximum context",
    "too many tokens",
)


class _Closable(Protocol):
    async def close(self) -> None: ...


_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[Any, ...], Any]] = (
    weakref.WeakKeyDictionary()
)


def require_sdk(module: str, extra: str) -> None:
    """Check that a provider SDK is installed, without importing it (that is slow).

    Raises:
        ValueError: When the SDK is not installed (the model activity turns a ValueError
            from resolving a spec into a non-retryable failure that names the fix).
    """
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # ValueError: a module set to None in sys.modules
        found = False
    if not found:
        raise ValueError(f"the {module!r} package is not installed: {install_hint(extra)}")


def _import_all(modules: tuple[str, ...]) -> ModuleType:
    loaded = [importlib.import_module(name) for name in modules]
    return loaded[0]


async def load_sdk(*modules: str) -> ModuleType:
    """Import an SDK (and the submodules a call needs) off the event loop.

    Importing `anthropic` or `openai` takes seconds on a busy machine: done on the worker's
    event loop, it would starve the model activity's heartbeats (and every other activity)
    on the first call. Returns the first module.
    """
    if all(name in sys.modules for name in modules):
        return sys.modules[modules[0]]
    return await asyncio.to_thread(_import_all, modules)


async def cached_client(key: tuple[Any, ...], build: Callable[[], Any]) -> Any:
    """The running loop's SDK client for `key`, built on first use (off the loop: slow).

    SDK clients hold an HTTP connection pool bound to the loop that opened it, hence one
    per loop; the key holds everything the client was built from (base URL, key, timeout).
    """
    per_loop = _clients.setdefault(asyncio.get_running_loop(), {})
    client = per_loop.get(key)
    if client is None or client.is_closed():
        client = await asyncio.to_thread(build)
        per_loop[key] = per_loop.get(key) or client  # a concurrent call may have won
        client = per_loop[key]
    return client


async def aclose_shared_clients() -> None:
    """Close the running loop's pooled clients: SDK clients and httpx ones (at shutdown)."""
    per_loop: dict[tuple[Any, ...], _Closable] = _clients.pop(asyncio.get_running_loop(), {})
    for client in per_loop.values():
        await client.close()
    await _aclose_http_clients()


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds a provider asked us to wait, from `retry-after-ms` or `Retry-After`.

    Args:
        headers: The response headers (case-insensitive, as httpx's are).
        now: The current time (seconds since the epoch), for HTTP-date values.

    Returns:
        A non-negative number of seconds, or None when no usable header is present.
    """
    # OpenAI sends the millisecond form too; it is the more precise of the two.
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            value = float(millis) / 1000
        except ValueError:
            pass
        else:
            if math.isfinite(value):
                return max(value, 0.0)
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        pass
    else:
        return max(seconds, 0.0) if math.isfinite(seconds) else None
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # RFC 9110 dates are GMT; a naive one is a sloppy server's
        return None
    current = time.time() if now is None else now
    return max(when.timestamp() - current, 0.0)


def excerpt(text: str) -> str:
    """At most ~1000 characters of a provider's text, or a note that it was empty."""
    text = text.strip()
    if len(text) > _MAX_PROVIDER_MESSAGE:
        return text[:_MAX_PROVIDER_MESSAGE] + "..."
    return text or "(empty body)"


def provider_message(text: str) -> str:
    """The provider's own words about an error, in the shapes providers and servers use."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return excerpt(text)
    if isinstance(data, dict):
        error = data.get("error")
        # OpenAI: {"error": {"message", "type", "code"}}; Anthropic: {"type": "error",
        # "error": {"type", "message"}}; others: {"error": "..."}, {"message": "..."}
        # (vLLM), {"detail": "..."} (FastAPI-based servers).
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return excerpt(error["message"])
        for candidate in (error, data.get("message"), data.get("detail")):
            if isinstance(candidate, str) and candidate:
                return excerpt(candidate)
    return excerpt(text)


def int_field(value: Any) -> int:
    """A token count from a usage object: non-negative ints only, else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


class SdkFailure:
    """How an SDK exception maps to a `ModelError`: problem text and classification."""

    def __init__(
        self,
        problem: str,
        *,
        retryable: bool,
        retry_after: float | None = None,
        status: int | None = None,
        context_exceeded: bool = False,
    ) -> None:
        self.problem = problem
        self.context_exceeded = context_exceeded
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status

    def error(self, where: str, secret: str | None) -> ModelError:
        """The `ModelError`, prefixed with `where` and with `secret` redacted."""
        message = f"{where}: {self.problem}"
        if secret:
            # Providers and proxies sometimes echo the credential back in their errors.
            message = message.replace(secret, "***")
        return ModelError(
            message,
            retryable=self.retryable,
            retry_after=self.retry_after,
            status=self.status,
            context_exceeded=self.context_exceeded,
        )


def sdk_failure(sdk: ModuleType, exc: Exception, *, timeout: float, key_env: str) -> SdkFailure:
    """Classify an exception raised by an official SDK (`openai` or `anthropic`).

    Both SDKs share one exception design: `APITimeoutError` is an `APIConnectionError`,
    and `APIStatusError` carries the HTTP response. Auth failures and context-length
    errors fail the run with a reason that says what to fix; rate limits, overload and
    5xx retry after the provider's `retry-after`.

    Args:
        sdk: The SDK module, for its exception classes.
        exc: What the SDK raised.
        timeout: The request timeout, to say how long we waited.
        key_env: The environment variable holding the API key, named in auth errors.
    """
    if isinstance(exc, sdk.APITimeoutError):
        return SdkFailure(f"timed out after {timeout:g}s", retryable=True)
    if isinstance(exc, sdk.APIConnectionError):
        cause = exc.__cause__
        if type(cause).__name__ in {"UnsupportedProtocol", "InvalidURL"}:
            # A base URL without http(s):// is a configuration error, not a blip.
            return SdkFailure(f"bad base URL: {cause}", retryable=False)
        detail = f"{type(cause).__name__}: {cause}" if cause is not None else str(exc)
        return SdkFailure(f"connection error ({detail})", retryable=True)
    if isinstance(exc, sdk.APIStatusError):
        status = exc.status_code
        said = provider_message(exc.response.text)
        if status in (401, 403):
            return SdkFailure(
                f"authentication failed (HTTP {status}); check {key_env}: {said}",
                retryable=False,
                status=status,
            )
        if status in (400, 413) and any(marker in said.lower() for marker in _CONTEXT_MARKERS):
            return SdkFailure(
                f"the conversation exceeds the model's context window (HTTP {status}): {said}",
                retryable=False,
                status=status,
                context_exceeded=True,
            )
        retryable = status in RETRYABLE_STATUSES or status >= 500
        return SdkFailure(
            f"HTTP {status}: {said}",
            retryable=retryable,
            retry_after=parse_retry_after(exc.response.headers) if retryable else None,
            status=status,
        )
    if isinstance(exc, sdk.APIError):
        return SdkFailure(f"request failed ({type(exc).__name__}): {exc}", retryable=False)
    raise exc
