"""Talking to a provider's token endpoint: client authentication, errors, and reading the
token response (expiry, granted scopes)."""

from __future__ import annotations

import base64
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote

import httpx

from ._errors import TokenEndpointError
from ._providers import OAuthProvider

__all__ = ["dedupe_scopes", "granted_scopes", "post_to_token_endpoint", "token_expiry"]


def dedupe_scopes(scopes: Iterable[str]) -> tuple[str, ...]:
    """The scopes in order, without repeats or empty ones."""
    return tuple(dict.fromkeys(s for s in scopes if s))


async def post_to_token_endpoint(
    http: httpx.AsyncClient | None,
    config: OAuthProvider,
    url: str,
    form: dict[str, str],
    *,
    expect_token: bool = True,
) -> dict[str, Any]:
    """POST `form` to one of the provider's endpoints, authenticated as its client.

    Args:
        http: The client to use; None: a short-lived one for this request.
        config: The provider: its client id, secret and how it wants them.
        url: The token (or revocation) endpoint.
        form: The request's fields, without the client's credentials.
        expect_token: The answer must carry an `access_token`.

    Raises:
        TokenEndpointError: The endpoint answered an error (or no token when one is due).
        httpx.HTTPError: The request failed on the way.
    """
    form = {**form}
    headers = {"Accept": "application/json"}
    secret = config.client_secret()
    if config.token_auth_method == "client_secret_basic" and secret is not None:
        pair = f"{quote(config.client_id, safe='')}:{quote(secret, safe='')}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
    else:
        form["client_id"] = config.client_id
        if secret is not None:
            form["client_secret"] = secret
    if http is not None:
        response = await http.post(url, data=form, headers=headers)
    else:
        async with httpx.AsyncClient(timeout=15.0) as client:
            response = await client.post(url, data=form, headers=headers)
    try:
        parsed: Any = response.json()
    except ValueError:
        parsed = None
    body: dict[str, Any] = parsed if isinstance(parsed, dict) else {}
    error = body.get("error")
    if response.status_code >= 400 or error:
        description = str(body.get("error_description") or "")
        status = response.status_code if response.status_code >= 400 else 400
        raise TokenEndpointError(
            f"{config.name} token endpoint answered {response.status_code}"
            + (f" {error}" if error else "")
            + (f": {description}" if description else ""),
            status=status,
            error=str(error) if error else None,
            description=description or None,
        )
    if expect_token and not body.get("access_token"):
        raise TokenEndpointError(
            f"{config.name} token endpoint answered without an access_token",
            status=response.status_code,
        )
    return body


def token_expiry(body: dict[str, Any], now: datetime) -> datetime | None:
    """When the token in a token response expires (`expires_in`), or None if unsaid."""
    expires_in = body.get("expires_in")
    if expires_in is None:
        return None
    try:
        return now + timedelta(seconds=float(expires_in))
    except (TypeError, ValueError):
        return None


def granted_scopes(
    config: OAuthProvider, body: dict[str, Any], asked: tuple[str, ...]
) -> tuple[str, ...]:
    """The scopes a token response grants: its `scope` if any, else those asked for."""
    # RFC 6749 5.1: `scope` is in the response when it differs from the request.
    scope = body.get("scope")
    if isinstance(scope, str):
        separator = config.scope_separator.strip() or None
        return dedupe_scopes(part.strip() for part in scope.split(separator))
    if isinstance(scope, list):
        return dedupe_scopes(str(s) for s in scope)
    return asked
