"""The worker's side of OAuth pauses: grants and tokens for a run's user, and the callback's
way of waking the run.

The broker is what the tool activities and the preflight activity use
(`durable_tools.worker.AuthorizationBroker`); the notifier turns a finished
authorization into the `authorization_completed` signal, carrying a grant reference,
never a token.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime

from temporalio.client import Client

from durable_tools.oauth._flow import OAuthManager
from durable_tools.oauth._records import AuthorizationFailure, CompletedAuthorization
from durable_tools.protocol._limits import check_handler_prefix
from durable_tools.protocol._wait_types import AuthorizationCompleted
from durable_tools.tools._context import Identity
from durable_tools.tools._errors import ToolExecutionError
from durable_tools.tools._spec import OAuthRequirement

__all__ = [
    "AUTHORIZATION_SIGNAL",
    "OAuthBroker",
    "authorization_signal",
    "oauth_user",
    "run_notifier",
]

AUTHORIZATION_SIGNAL = "authorization_completed"


def authorization_signal(handler_prefix: str) -> str:
    """The signal that tells a run (its handlers named `handler_prefix + name`) how its
    authorization ended.

    Raises:
        ValueError: the prefix is not one a run can have (a tampered record).
    """
    return check_handler_prefix(handler_prefix) + AUTHORIZATION_SIGNAL


def oauth_user(identity: Identity) -> str:
    """The token store's key for a run's user: `tenant/user`, or `user` without a tenant.

    Raises:
        ToolExecutionError: the run has no user, so no grant can belong to it.
    """
    if not identity.user:
        raise ToolExecutionError(
            "this tool needs the user's OAuth authorization, but the run has no user: "
            "start it with an identity (durable-tools run --user ...)"
        )
    return f"{identity.tenant}/{identity.user}" if identity.tenant else identity.user


class OAuthBroker:
    """Grants, authorization URLs and access tokens from an `OAuthManager`.

    Args:
        manager: The worker's OAuth manager (providers, token store, state store).
    """

    def __init__(self, manager: OAuthManager) -> None:
        self.manager = manager

    async def grant_ref(self, identity: Identity, requirement: OAuthRequirement) -> str | None:
        grant = await self.manager.get_grant(
            oauth_user(identity), requirement.provider, requirement.scopes
        )
        return grant.grant_ref if grant else None

    async def authorization_url(
        self,
        identity: Identity,
        requirement: OAuthRequirement,
        workflow_id: str,
        call_id: str,
        *,
        handler_prefix: str = "",
    ) -> str:
        """Start an authorization; `handler_prefix` is the run's (see `run_notifier`)."""
        url, _ = await self.authorization_link(
            identity, requirement, workflow_id, call_id, handler_prefix=handler_prefix
        )
        return url

    async def authorization_link(
        self,
        identity: Identity,
        requirement: OAuthRequirement,
        workflow_id: str,
        call_id: str,
        *,
        handler_prefix: str = "",
    ) -> tuple[str, datetime]:
        """The authorization URL and when it expires (the OAuth state's lifetime)."""
        request = await self.manager.begin_authorization(
            requirement.provider,
            oauth_user(identity),
            requirement.scopes,
            workflow_id,
            call_id,
            handler_prefix=check_handler_prefix(handler_prefix),
        )
        return request.url, request.expires_at

    async def access_token(self, identity: Identity, requirement: OAuthRequirement) -> str:
        return await self.manager.access_token(
            oauth_user(identity), requirement.provider, requirement.scopes
        )


def run_notifier(
    client: Client,
) -> tuple[
    Callable[[CompletedAuthorization], Awaitable[None]],
    Callable[[AuthorizationFailure], Awaitable[None]],
]:
    """Callback hooks that signal the waiting run: `(on_complete, on_error)`.

    The signal is `authorization_completed` on the run's workflow id, its name prefixed by
    the record's `handler_prefix` when the run is an agent loop embedded in a user's
    workflow (`AgentLoop.register_handlers(prefix)`).
    """

    async def on_complete(completed: CompletedAuthorization) -> None:
        handle = client.get_workflow_handle(completed.workflow_id)
        await handle.signal(
            authorization_signal(completed.handler_prefix),
            AuthorizationCompleted(call_id=completed.call_id, grant_ref=completed.grant_ref),
        )

    async def on_error(failure: AuthorizationFailure) -> None:
        handle = client.get_workflow_handle(failure.workflow_id)
        reason = failure.error + (f": {failure.description}" if failure.description else "")
        await handle.signal(
            authorization_signal(failure.handler_prefix),
            AuthorizationCompleted(call_id=failure.call_id, error=reason),
        )

    return on_complete, on_error
