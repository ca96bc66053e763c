"""CSRF protection: a random token bound to the session, required on every cookie-borne POST.

The token lives in the signed session cookie and is echoed by each form in a hidden field
(or by scripts in an `X-CSRF-Token` header). A cross-site page can make the browser send
the cookie, but cannot read the token to put in the form. Requests authenticated with a
Bearer token carry no cookie and need none.
"""

from __future__ import annotations

import hmac
import secrets

from starlette.requests import HTTPConnection

__all__ = ["CSRF_FIELD", "CSRF_HEADER", "csrf_token", "valid_csrf"]

CSRF_FIELD = "csrf_token"
CSRF_HEADER = "x-csrf-token"
_KEY = "csrf"


def csrf_token(conn: HTTPConnection) -> str:
    """The session's CSRF token, made on first use."""
    token = conn.session.get(_KEY)
    if not isinstance(token, str) or len(token) < 32:
        token = secrets.token_urlsafe(32)
        conn.session[_KEY] = token
    return token


def valid_csrf(conn: HTTPConnection, submitted: object) -> bool:
    """Whether `submitted` is the session's CSRF token (constant-time comparison)."""
    expected = conn.session.get(_KEY)
    if not isinstance(expected, str) or not isinstance(submitted, str) or not submitted:
        return False
    return hmac.compare_digest(expected.encode(), submitted.encode())
