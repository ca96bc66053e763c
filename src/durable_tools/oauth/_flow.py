"""The authorization code flow with PKCE, token refresh and revocation, on the worker side.

`OAuthManager` ties together the providers, the token store and the pending-state store:

- `get_grant()` answers "may this call run?" without touching the network;
- `begin_authorization()` starts a flow for a run that must pause, and returns the URL;
- `complete_authorization()` is what the callback endpoint calls with `state` and `code`;
- `access_token()` hands a tool a valid token, refreshing it (once, under concurrency) if due.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from pydantic import SecretStr

from durable_tools.tools._errors import NeedsAuthorization, ToolExecutionError

from ._errors import ExpiredState, InvalidState, TokenEndpointError
from ._pkce import code_challenge, new_code_verifier, new_state
from ._providers import OAuthProvider, ProviderRegistry
from ._records import (
    AuthorizationRequest,
    CompletedAuthorization,
    PendingAuthorization,
)
from ._state import FileStateStore, StateStore
from ._token_endpoint import dedupe_scopes, granted_scopes, post_to_token_endpoint, token_expiry
from ._tokens import FileTokenStore, Grant, StoredToken, TokenStore, new_grant_ref

__all__ = ["OAuthManager"]

logger = logging.getLogger("durable_tools.oauth")


def _utcnow() -> datetime:
    return datetime.now(UTC)


class OAuthManager:
    """OAuth grants for tools, on the worker.

    Args:
        providers: The configured providers.
        tokens: Where grants are stored.
        states: Where pending authorizations wait; must be shared with the process that
            serves the callback.
        http: An httpx client for the token endpoints; default a short-lived one per request.
        state_ttl: Seconds a started authorization stays valid.
        expired_kept_for: Seconds an expired authorization is still remembered, so that a
            late click on its link is told how to get a new one (not "unknown state").
        refresh_margin: Seconds before expiry at which an access token is refreshed.
        now: The clock (tests move it).
    """

    def __init__(
        self,
        providers: ProviderRegistry | Iterable[OAuthProvider],
        tokens: TokenStore,
        states: StateStore,
        *,
        http: httpx.AsyncClient | None = None,
        state_ttl: float = 15 * 60,
        expired_kept_for: float = 7 * 24 * 3600,
        refresh_margin: float = 60.0,
        now: Callable[[], datetime] = _utcnow,
    ) -> None:
        self.providers = (
            providers if isinstance(providers, ProviderRegistry) else ProviderRegistry(providers)
        )
        self.tokens = tokens
        self.states = states
        self.state_ttl = timedelta(seconds=state_ttl)
        self.expired_kept_for = timedelta(seconds=expired_kept_for)
        self.refresh_margin = timedelta(seconds=refresh_margin)
        self._http = http
        self._now = now
        self._refresh_locks: dict[tuple[str, str], asyncio.Lock] = {}

    @classmethod
    def from_data_dir(
        cls,
        providers: ProviderRegistry | Iterable[OAuthProvider],
        data_dir: str | os.PathLike[str] | None = None,
        *,
        key: str | bytes | None = None,
        **options: Any,
    ) -> OAuthManager:
        """A manager with file stores under `<data_dir>/oauth/` (`tokens.enc`, `pending.enc`).

        Args:
            providers: The configured providers.
            data_dir: Default `DURABLE_TOOLS_HOME`, else `~/.durable-tools`.
            key: Fernet key(s); default `DURABLE_TOOLS_TOKEN_KEY`.
            options: Passed on to the constructor.
        """
        if data_dir is None:
            home = os.environ.get("DURABLE_TOOLS_HOME")
            data_dir = Path(home).expanduser() if home else Path.home() / ".durable-tools"
        root = Path(data_dir) / "oauth"
        return cls(
            providers,
            FileTokenStore(root / "tokens.enc", key),
            FileStateStore(root / "pending.enc", key),
            **options,
        )

    # -- grants ------------------------------------------------------------------------

    async def get_grant(self, user: str, provider: str, scopes: Iterable[str] = ()) -> Grant | None:
        """The user's usable grant at the provider covering `scopes`, or None.

        A grant whose access token expired counts only if it can be refreshed. No network.
        """
        self.providers.get(provider)
        token = await self.tokens.load(user, provider)
        if token is None or not token.grant().covers(scopes):
            return None
        if token.refresh_token is None and not token.fresh(self._now(), timedelta(0)):
            return None
        return token.grant()

    async def revoke(self, user: str, provider: str) -> bool:
        """Forget the user's grant at the provider (and tell the provider, if it has a
        revocation endpoint; best effort). Returns whether a grant was stored."""
        token = await self.tokens.delete(user, provider)
        if token is None:
            return False
        config = self.providers.get(provider)
        if config.revocation_url:
            secret = token.refresh_token or token.access_token
            try:
                await post_to_token_endpoint(
                    self._http,
                    config,
                    config.revocation_url,
                    {"token": secret.get_secret_value()},
                    expect_token=False,
                )
            except (httpx.HTTPError, TokenEndpointError) as err:
                logger.warning("revoking the grant at %s failed: %s", provider, type(err).__name__)
        logger.info("revoked the %s grant of user %s", provider, user)
        return True

    # -- the authorization code flow ---------------------------------------------------

    async def begin_authorization(
        self,
        provider: str,
        user: str,
        scopes: Iterable[str],
        workflow_id: str,
        call_id: str,
        *,
        handler_prefix: str = "",
    ) -> AuthorizationRequest:
        """Start an authorization for a call that needs a grant.

        Asks for the requested scopes (or the provider's default ones) plus whatever the
        user already granted, so a new grant never narrows an old one. `handler_prefix`
        is the run's (an embedded agent loop's) handler prefix, kept for the callback's
        signal.

        Returns:
            The URL for the person and its `state`; the PKCE verifier stays in the store.
        """
        config = self.providers.get(provider)
        wanted = dedupe_scopes(scopes) or config.scopes
        existing = await self.tokens.load(user, provider)
        if existing is not None:
            wanted = dedupe_scopes((*wanted, *existing.scopes))
        now = self._now()
        await self.states.purge(now - self.expired_kept_for)
        verifier = new_code_verifier()
        pending = PendingAuthorization(
            state=new_state(),
            provider=provider,
            user=user,
            scopes=wanted,
            workflow_id=workflow_id,
            call_id=call_id,
            handler_prefix=handler_prefix,
            redirect_uri=config.redirect_uri,
            code_verifier=SecretStr(verifier),
            created_at=now,
            expires_at=now + self.state_ttl,
        )
        await self.states.put(pending)
        url = config.authorization_url(
            state=pending.state, code_challenge=code_challenge(verifier), scopes=wanted
        )
        logger.info(
            "authorization of %s for user %s started by %s/%s", provider, user, workflow_id, call_id
        )
        return pending.request(url)

    async def take_state(self, state: str) -> PendingAuthorization:
        """Consume a `state`: it is single-use, whatever happens next.

        Raises:
            InvalidState: Unknown or already used.
            ExpiredState: Issued more than `state_ttl` ago (the pending record is on the
                exception as `.pending`; it stays in the store, unusable, for
                `expired_kept_for`).
        """
        pending = await self.states.take(state) if state else None
        if pending is None:
            raise InvalidState("unknown or already used authorization state")
        if pending.expired(self._now()):
            if pending.outcome is None:
                # Put back: a reload of the late link explains again (purged after
                # `expired_kept_for`). An expired state can never complete.
                await self.states.put(pending)
            raise ExpiredState("the authorization link expired: ask the run for a new one", pending)
        return pending

    async def complete_authorization(self, state: str, code: str) -> CompletedAuthorization:
        """Finish an authorization: consume the state, swap the code for tokens, store them.

        Raises:
            InvalidState, ExpiredState: The state is unknown, used or expired.
            TokenEndpointError: The provider refused the code (wrong verifier, reused code).
        """
        pending = await self.take_state(state)
        return await self.exchange_code(pending, code)

    async def exchange_code(
        self, pending: PendingAuthorization, code: str
    ) -> CompletedAuthorization:
        """Swap the code of a consumed pending authorization for tokens, and store them."""
        config = self.providers.get(pending.provider)
        body = await post_to_token_endpoint(
            self._http,
            config,
            config.token_url,
            {
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": pending.redirect_uri,
                "code_verifier": pending.code_verifier.get_secret_value(),
            },
        )
        now = self._now()
        token = StoredToken(
            grant_ref=new_grant_ref(),
            user=pending.user,
            provider=pending.provider,
            scopes=granted_scopes(config, body, pending.scopes),
            access_token=SecretStr(body["access_token"]),
            refresh_token=SecretStr(body["refresh_token"]) if body.get("refresh_token") else None,
            token_type=str(body.get("token_type") or "Bearer"),
            expires_at=token_expiry(body, now),
            created_at=now,
        )
        await self.tokens.save(token)
        logger.info(
            "authorization of %s for user %s completed for %s/%s",
            pending.provider,
            pending.user,
            pending.workflow_id,
            pending.call_id,
        )
        return CompletedAuthorization(
            workflow_id=pending.workflow_id,
            call_id=pending.call_id,
            grant_ref=token.grant_ref,
            user=pending.user,
            provider=pending.provider,
            scopes=token.scopes,
            handler_prefix=pending.handler_prefix,
        )

    # -- access tokens -------------------------------------------------------------------

    async def access_token(self, user: str, provider: str, scopes: Iterable[str] = ()) -> str:
        """A valid access token of the user's grant, refreshed first if it is (nearly) expired.

        One refresh at a time per grant: concurrent callers in this process wait on an
        asyncio lock, other processes on a file lock, and all reuse the refreshed token.

        Raises:
            NeedsAuthorization: No grant covers `scopes`, or the provider refused the
                refresh (400/401: revoked or expired); the grant is then forgotten.
            ToolExecutionError: The token endpoint failed otherwise (retryable).
        """
        scopes = dedupe_scopes(scopes)
        config = self.providers.get(provider)
        token = await self._usable(user, provider, scopes)
        if token.fresh(self._now(), self.refresh_margin):
            return token.access_token.get_secret_value()
        lock = self._refresh_locks.setdefault((user, provider), asyncio.Lock())
        async with lock, self.tokens.refresh_lock(user, provider):
            # Someone may have refreshed while we waited.
            token = await self._usable(user, provider, scopes)
            if token.fresh(self._now(), self.refresh_margin):
                return token.access_token.get_secret_value()
            token = await self._refresh(config, token, scopes)
        return token.access_token.get_secret_value()

    async def _usable(self, user: str, provider: str, scopes: tuple[str, ...]) -> StoredToken:
        token = await self.tokens.load(user, provider)
        if token is None or not token.grant().covers(scopes):
            raise self._needs(user, provider, scopes, "no grant covers these scopes")
        if token.refresh_token is None and not token.fresh(self._now(), timedelta(0)):
            await self.tokens.delete(user, provider)
            raise self._needs(user, provider, scopes, "the access token expired")
        return token

    async def _refresh(
        self, config: OAuthProvider, token: StoredToken, scopes: tuple[str, ...]
    ) -> StoredToken:
        if token.refresh_token is None:
            # Fresh enough to use, but inside the margin and not refreshable: use it as is.
            return token
        try:
            body = await post_to_token_endpoint(
                self._http,
                config,
                config.token_url,
                {
                    "grant_type": "refresh_token",
                    "refresh_token": token.refresh_token.get_secret_value(),
                },
            )
        except TokenEndpointError as err:
            if err.rejected:
                await self.tokens.delete(token.user, token.provider)
                logger.info(
                    "%s refused to refresh the grant of user %s (%s): forgotten",
                    config.name,
                    token.user,
                    err.error or err.status,
                )
                raise self._needs(
                    token.user, token.provider, scopes, "the grant was revoked or expired"
                ) from err
            raise ToolExecutionError(str(err), retryable=True) from err
        except httpx.HTTPError as err:
            raise ToolExecutionError(
                f"token refresh at {config.name} failed: {type(err).__name__}", retryable=True
            ) from err
        now = self._now()
        refreshed = token.model_copy(
            update={
                "access_token": SecretStr(body["access_token"]),
                "refresh_token": (
                    SecretStr(body["refresh_token"])
                    if body.get("refresh_token")
                    else token.refresh_token
                ),
                "token_type": str(body.get("token_type") or token.token_type),
                "expires_at": token_expiry(body, now),
                "scopes": granted_scopes(config, body, token.scopes),
                "refreshed_at": now,
            }
        )
        await self.tokens.save(refreshed)
        logger.info("refreshed the %s grant of user %s", config.name, token.user)
        return refreshed

    @staticmethod
    def _needs(user: str, provider: str, scopes: tuple[str, ...], why: str) -> NeedsAuthorization:
        return NeedsAuthorization(
            f"authorization needed at {provider}: {why}",
            details={"user": user, "provider": provider, "scopes": list(scopes)},
        )
