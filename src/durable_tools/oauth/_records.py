"""The records of the OAuth flow, as data: what a run is shown, what the state store keeps,
and how an authorization ended.

A leaf module (it imports nothing else of the package), so that the errors, the stores and
the flow can all refer to these types without importing each other.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, SecretStr

__all__ = [
    "AuthorizationFailure",
    "AuthorizationRequest",
    "CompletedAuthorization",
    "PendingAuthorization",
]


class CompletedAuthorization(BaseModel):
    """A finished authorization: what the run is told. Holds a reference, never a token."""

    model_config = ConfigDict(frozen=True)

    workflow_id: str
    call_id: str
    grant_ref: str
    user: str
    provider: str
    scopes: tuple[str, ...] = ()
    handler_prefix: str = ""
    """What the run's handler names start with (see `PendingAuthorization`)."""


class AuthorizationFailure(BaseModel):
    """An authorization that ended without a grant (denied, expired, refused code)."""

    model_config = ConfigDict(frozen=True)

    workflow_id: str
    call_id: str
    user: str
    provider: str
    error: str
    """An OAuth error code (`access_denied`, `invalid_grant`, ...) or `expired_state`."""
    description: str = ""
    handler_prefix: str = ""
    """What the run's handler names start with (see `PendingAuthorization`)."""


class AuthorizationRequest(BaseModel):
    """What a run shows a person: where to go to grant access. Holds no secret."""

    model_config = ConfigDict(frozen=True)

    url: str
    """The provider's authorization URL, with state, scopes and the S256 challenge."""
    state: str
    """The single-use `state` the callback will carry back."""
    expires_at: datetime
    """After this, the callback is refused and the run must ask again."""
    provider: str
    user: str
    scopes: tuple[str, ...]
    """The scopes asked for (the tool's, plus any the user already granted)."""
    workflow_id: str
    call_id: str


class PendingAuthorization(BaseModel):
    """A started authorization, as the state store keeps it (verifier included)."""

    model_config = ConfigDict(frozen=True)

    state: str
    provider: str
    user: str
    scopes: tuple[str, ...]
    workflow_id: str
    call_id: str
    redirect_uri: str
    code_verifier: SecretStr
    """The PKCE verifier: a secret that never leaves the worker side."""
    created_at: datetime
    expires_at: datetime
    handler_prefix: str = ""
    """What the run's handler names start with: "" for an agent workflow, the prefix of an
    agent loop embedded in a user's workflow. The run is told through the signal
    `handler_prefix + "authorization_completed"`. Records stored before it read as ""."""
    outcome: CompletedAuthorization | AuthorizationFailure | None = None
    """Set when the callback has finished but the run could not be told yet (Temporal was
    unreachable): the record then waits for the notification to be retried, not for a code."""

    def expired(self, now: datetime) -> bool:
        """True once `expires_at` has passed."""
        return now >= self.expires_at

    def request(self, url: str) -> AuthorizationRequest:
        """The public view of this authorization."""
        return AuthorizationRequest(
            url=url,
            state=self.state,
            expires_at=self.expires_at,
            provider=self.provider,
            user=self.user,
            scopes=self.scopes,
            workflow_id=self.workflow_id,
            call_id=self.call_id,
        )

    def to_record(self) -> dict[str, Any]:
        """A JSON-able dict with the verifier revealed: for encrypted storage only."""
        record = self.model_dump(mode="json")
        record["code_verifier"] = self.code_verifier.get_secret_value()
        return record
