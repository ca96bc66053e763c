"""What tool activities need on the worker: the registry and worker-side resources.

Nothing here crosses the wire. Secrets, clients and tokens stay in worker memory and are
handed to tools through their `ToolContext`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from durable_tools.tools._artifacts import ArtifactStore, default_artifact_store
from durable_tools.tools._context import Identity
from durable_tools.tools._registry import ToolRegistry
from durable_tools.tools._spec import OAuthRequirement

__all__ = ["AuthorizationBroker", "ExpiringLinks", "ToolRuntime"]


class AuthorizationBroker(Protocol):
    """Worker-side OAuth: grants, authorization URLs and access tokens for a run's user."""

    async def grant_ref(self, identity: Identity, requirement: OAuthRequirement) -> str | None:
        """An opaque reference to a usable grant, or None when the user must authorize."""
        ...

    async def authorization_url(
        self, identity: Identity, requirement: OAuthRequirement, workflow_id: str, call_id: str
    ) -> str:
        """Start an authorization for the call and return the URL the user must open.

        A broker that serves agents embedded in a user's workflow (`AgentLoop`) also takes
        a keyword `handler_prefix: str` (passed only when not empty): the callback then
        signals `handler_prefix + "authorization_completed"` on `workflow_id`.
        """
        ...

    async def access_token(self, identity: Identity, requirement: OAuthRequirement) -> str:
        """A valid access token (refreshed if needed); raises NeedsAuthorization if none."""
        ...


@runtime_checkable
class ExpiringLinks(Protocol):
    """A broker that also says when its authorization links expire (`OAuthBroker` does)."""

    async def authorization_link(
        self, identity: Identity, requirement: OAuthRequirement, workflow_id: str, call_id: str
    ) -> tuple[str, datetime]:
        """Like `AuthorizationBroker.authorization_url`, with the link's expiry (and the
        same optional `handler_prefix` keyword)."""
        ...


@dataclass
class ToolRuntime:
    """The worker-side half of tool execution."""

    registry: ToolRegistry
    """The tools this worker runs."""
    resources: Mapping[str, Any] = field(default_factory=dict)
    """Objects tools receive through `Injected(...)` or `ToolContext.resource`."""
    secrets: Mapping[str, str] = field(default_factory=dict, repr=False)
    """Secrets tools receive through `Injected(..., secret=True)` or `ToolContext.secret`."""
    artifact_store: ArtifactStore = field(default_factory=default_artifact_store)
    """Where outputs over the limit go."""
    oauth: AuthorizationBroker | None = None
    """OAuth broker, needed when a tool declares an OAuth requirement."""
    required_identity: tuple[str, ...] = ()
    """Parts of a run's identity (`user`, `tenant`, `session`) this worker requires: the
    catalog activity, a run's first step, refuses a run without them."""

    def secret_values(self) -> list[str]:
        """Every secret value this worker holds, to scrub from error messages."""
        return [value for value in self.secrets.values() if len(value) >= 4]
