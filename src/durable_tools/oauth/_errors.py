"""Errors of the OAuth flow. None of them ever carries a token, a code or a verifier."""

from __future__ import annotations

from ._records import PendingAuthorization

__all__ = [
    "ExpiredState",
    "InvalidState",
    "OAuthConfigError",
    "OAuthError",
    "TokenEndpointError",
    "TokenKeyError",
    "UnknownProvider",
]


class OAuthError(Exception):
    """Base of every OAuth error."""


class OAuthConfigError(OAuthError, ValueError):
    """The OAuth configuration is wrong: a provider file, a missing client secret, ..."""


class TokenKeyError(OAuthConfigError):
    """The token encryption key is missing, malformed, or does not open the stored tokens."""


class UnknownProvider(OAuthConfigError, KeyError):
    """No provider of this name is configured."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown provider"


class InvalidState(OAuthError):
    """The `state` of a callback is unknown or was already used.

    Args:
        message: What was wrong.
        pending: The consumed pending authorization, when the state was known (expired).
    """

    def __init__(self, message: str, pending: PendingAuthorization | None = None) -> None:
        super().__init__(message)
        self.pending = pending


class ExpiredState(InvalidState):
    """The `state` of a callback was issued too long ago."""


class TokenEndpointError(OAuthError):
    """The provider's token endpoint refused a request or could not be reached.

    Args:
        message: What happened, without secrets.
        status: The HTTP status, None if no response came.
        error: The OAuth `error` code of the response (e.g. `invalid_grant`), if any.
        description: The response's `error_description`, if any.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        error: str | None = None,
        description: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.error = error
        self.description = description

    @property
    def rejected(self) -> bool:
        """True when the provider refused the grant itself (400/401): asking again won't help."""
        return self.status in (400, 401)
