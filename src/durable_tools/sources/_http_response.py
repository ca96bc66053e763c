"""Sending an HTTP tool's request, and reading what came back (or did not).

Every failure becomes a classified `ToolError`: retryable when repeating is harmless
(nothing reached the server, a 429/5xx, or a timeout on a request that is safe to
repeat), with the service's answer quoted only after the run's credentials are
scrubbed from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx

from durable_tools.tools._artifacts import ArtifactStore
from durable_tools.tools._classify import parse_retry_after
from durable_tools.tools._errors import ToolError, ToolExecutionError, ToolTimeout
from durable_tools.tools._results import ContentBlock, ToolResult
from durable_tools.tools._scrub import display_url, scrub, scrub_value

from ._http_auth import HttpAuth

__all__ = [
    "DEFAULT_ERROR_BODY",
    "describe_request",
    "read_response",
    "send_request",
    "success_value",
]

DEFAULT_ERROR_BODY = 2000
"""Characters of a failed response's body quoted in the error the model reads."""
_MAX_URL_IN_MESSAGE = 200


def describe_request(request: httpx.Request) -> str:
    """`METHOD url` for error messages: no userinfo or query (they may hold a key), long
    paths cut."""
    url = display_url(str(request.url), query=False)
    if len(url) > _MAX_URL_IN_MESSAGE:  # arguments in the path can be long
        url = url[: _MAX_URL_IN_MESSAGE - 3] + "..."
    return f"{request.method} {url}"


async def send_request(
    client: httpx.AsyncClient,
    request: httpx.Request,
    *,
    where: str,
    timeout: float,
    safe_to_repeat: bool,
) -> httpx.Response:
    """Send `request`, turning transport failures into classified tool errors.

    Raises:
        ToolExecutionError: no connection (retryable), or a network error after the
            request may have been processed (retryable only if `safe_to_repeat`).
        ToolTimeout: no answer within `timeout` (retryable only if `safe_to_repeat`).
    """
    try:
        return await client.send(request)
    except httpx.TransportError as exc:
        raise _transport_failure(exc, where, timeout, safe_to_repeat) from None


def _transport_failure(
    exc: httpx.TransportError, where: str, timeout: float, safe_to_repeat: bool
) -> ToolError:
    name = type(exc).__name__
    details = {"exception_type": name}
    if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout):
        # Nothing reached the server: always safe to try again.
        message = f"could not connect for {where}: {name}"
        return ToolExecutionError(message, retryable=True, details=details)
    if isinstance(exc, httpx.TimeoutException):
        message = f"{where} got no answer within {timeout:g}s"
        return ToolTimeout(message, retryable=safe_to_repeat, details=details)
    # The request may have been processed: repeat it only if that is harmless.
    message = f"network error during {where}: {name}"
    return ToolExecutionError(message, retryable=safe_to_repeat, details=details)


def _bounded(text: str, limit: int) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    return text[:limit] + f"... [{len(text) - limit} more characters]"


def read_response(
    response: httpx.Response,
    *,
    where: str,
    secrets: list[str],
    auth: Sequence[HttpAuth] = (),
    max_error_body: int = DEFAULT_ERROR_BODY,
    store: ArtifactStore | None = None,
) -> Any:
    """The tool's result for a 2xx answer, with `secrets` scrubbed from it.

    Raises:
        ToolExecutionError: any other status: retryable for 429 and 5xx (with the
            server's Retry-After), otherwise not; the scrubbed body is quoted.
        Exception: what an auth's `on_unauthorized` gives for a 401/403.
    """
    status = response.status_code
    if 200 <= status < 300:
        return scrub_value(success_value(response, store), secrets)
    details: dict[str, Any] = {"status_code": status, "request": where}
    # Scrubbed before the cut, so a cut cannot leave half a key that no longer matches.
    body = _bounded(scrub(response.text, secrets), max_error_body) if response.content else ""
    said = f": {body}" if body else ""
    if status == 429 or status >= 500:
        retry_after = parse_retry_after(response.headers.get("Retry-After"))
        wait = f" (Retry-After {retry_after:g}s)" if retry_after is not None else ""
        raise ToolExecutionError(
            f"{where} answered HTTP {status}{wait}; try again later{said}",
            retryable=True,
            retry_after=retry_after,
            details=details,
        )
    if status in (401, 403):
        for each in auth:
            special = each.on_unauthorized(status)
            if special is not None:
                raise special
    if 300 <= status < 400:
        location = response.headers.get("Location")
        said = f"; it redirects to {scrub(location, secrets)}" if location else said
    raise ToolExecutionError(
        f"{where} answered HTTP {status} {response.reason_phrase}{said}",
        retryable=False,
        details=details,
    )


def success_value(response: httpx.Response, store: ArtifactStore | None = None) -> Any:
    """A 2xx body as the tool's result: JSON, text, or binary kept out of band."""
    status = response.status_code
    if not response.content:
        return f"HTTP {status} {response.reason_phrase} (no content)"
    media = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
    if "json" in media:
        try:
            return response.json()
        except ValueError:
            return response.text
    if media.startswith("text/") or media in ("", "application/xml") or media.endswith("+xml"):
        return response.text
    try:
        return response.content.decode("utf-8")
    except UnicodeDecodeError:
        if store is not None:  # kept out of band: the model reads where it is
            ref = store.put(response.content, media or "application/octet-stream")
            note = (
                f"HTTP {status}: {ref.media_type} stored as artifact {ref.uri} ({ref.size} bytes)"
            )
            return ToolResult(
                content=[ContentBlock(type="text", text=note, artifact=ref)], artifacts=[ref]
            )
        return ToolResult(
            content=[
                ContentBlock(
                    type="text",
                    text=f"HTTP {status}: {len(response.content)} bytes of binary {media} content",
                )
            ]
        )
