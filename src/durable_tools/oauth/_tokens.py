"""Token storage: OAuth grants per (user, provider), encrypted at rest.

A `Grant` is the public face of a stored token: who, which provider, which scopes, and an
opaque `grant_ref` (random, not derived from the token) that may travel to a workflow. The
tokens themselves stay in a `StoredToken`, inside a store, on the worker.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
from collections.abc import AsyncIterator, Iterable
from contextlib import AbstractAsyncContextManager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, SecretStr

from .._file_lock import lock_file
from ._storage import EncryptedJsonFile, load_key

__all__ = [
    "FileTokenStore",
    "Grant",
    "MemoryTokenStore",
    "StoredToken",
    "TokenStore",
    "new_grant_ref",
]


def new_grant_ref() -> str:
    """A fresh opaque grant reference."""
    return "grant_" + secrets.token_urlsafe(18)


class Grant(BaseModel):
    """What a user granted this application at a provider. Holds no token."""

    model_config = ConfigDict(frozen=True)

    grant_ref: str
    """Opaque, random id of this grant: what a run may be told."""
    user: str
    provider: str
    scopes: tuple[str, ...]
    """The scopes granted."""
    expires_at: datetime | None
    """When the current access token expires (None: the provider did not say)."""
    refreshable: bool
    """Whether a refresh token is held, so the grant outlives its access token."""
    created_at: datetime

    def covers(self, scopes: Iterable[str]) -> bool:
        """True when every one of `scopes` was granted."""
        return set(scopes) <= set(self.scopes)


class StoredToken(BaseModel):
    """A grant with its tokens, as a store keeps it. Its repr never shows the tokens."""

    model_config = ConfigDict(frozen=True)

    grant_ref: str
    user: str
    provider: str
    scopes: tuple[str, ...]
    access_token: SecretStr
    refresh_token: SecretStr | None = None
    token_type: str = "Bearer"
    expires_at: datetime | None = None
    created_at: datetime
    refreshed_at: datetime | None = None

    def grant(self) -> Grant:
        """The public view."""
        return Grant(
            grant_ref=self.grant_ref,
            user=self.user,
            provider=self.provider,
            scopes=self.scopes,
            expires_at=self.expires_at,
            refreshable=self.refresh_token is not None,
            created_at=self.created_at,
        )

    def fresh(self, now: datetime, margin: timedelta) -> bool:
        """True while the access token is good for at least `margin` more."""
        return self.expires_at is None or now + margin < self.expires_at

    def to_record(self) -> dict[str, Any]:
        """A JSON-able dict with the tokens revealed: for encrypted storage only."""
        record = self.model_dump(mode="json")
        record["access_token"] = self.access_token.get_secret_value()
        if self.refresh_token is not None:
            record["refresh_token"] = self.refresh_token.get_secret_value()
        return record


@runtime_checkable
class TokenStore(Protocol):
    """Where grants live, keyed by (user, provider): one grant per user and provider."""

    async def load(self, user: str, provider: str) -> StoredToken | None:
        """The stored grant, or None."""
        ...

    async def save(self, token: StoredToken) -> None:
        """Store (or replace) the grant of `token.user` at `token.provider`."""
        ...

    async def delete(self, user: str, provider: str) -> StoredToken | None:
        """Forget the grant; return what was stored, if anything."""
        ...

    def refresh_lock(self, user: str, provider: str) -> AbstractAsyncContextManager[None]:
        """A lock that makes one refresh at a time per grant, across every process sharing
        the store. (Callers also serialise within their process.)"""
        ...


def _key(user: str, provider: str) -> str:
    return json.dumps([user, provider])


class MemoryTokenStore:
    """Grants in this process's memory: tests and throwaway setups."""

    def __init__(self) -> None:
        self._tokens: dict[str, StoredToken] = {}

    async def load(self, user: str, provider: str) -> StoredToken | None:
        return self._tokens.get(_key(user, provider))

    async def save(self, token: StoredToken) -> None:
        self._tokens[_key(token.user, token.provider)] = token

    async def delete(self, user: str, provider: str) -> StoredToken | None:
        return self._tokens.pop(_key(user, provider), None)

    @contextlib.asynccontextmanager
    async def refresh_lock(self, user: str, provider: str) -> AsyncIterator[None]:
        yield  # one process: the caller's asyncio lock is enough


class FileTokenStore:
    """Grants in one Fernet-encrypted file; several processes on a host may share it.

    The whole file is encrypted (users and providers included). Per-grant refresh locks
    are files in `<path>.locks/`, named by a hash of (user, provider).

    Args:
        path: The encrypted file, e.g. `~/.durable-tools/oauth/tokens.enc`.
        key: Fernet key(s); default the `DURABLE_TOOLS_TOKEN_KEY` environment variable.

    Raises:
        TokenKeyError: The key is missing or malformed.
    """

    def __init__(self, path: str | os.PathLike[str], key: str | bytes | None = None) -> None:
        self._file = EncryptedJsonFile(path, load_key(key))
        self._locks_dir = Path(path).with_name(Path(path).name + ".locks")

    @property
    def path(self) -> Path:
        """The encrypted file."""
        return self._file.path

    async def load(self, user: str, provider: str) -> StoredToken | None:
        record = (await self._file.read()).get(_key(user, provider))
        return StoredToken.model_validate(record) if record is not None else None

    async def save(self, token: StoredToken) -> None:
        record = token.to_record()

        def change(data: dict[str, Any]) -> None:
            data[_key(token.user, token.provider)] = record

        await self._file.update(change)

    async def delete(self, user: str, provider: str) -> StoredToken | None:
        def change(data: dict[str, Any]) -> dict[str, Any] | None:
            found: dict[str, Any] | None = data.pop(_key(user, provider), None)
            return found

        record = await self._file.update(change)
        return StoredToken.model_validate(record) if record is not None else None

    def refresh_lock(self, user: str, provider: str) -> AbstractAsyncContextManager[None]:
        digest = hashlib.sha256(_key(user, provider).encode()).hexdigest()[:32]
        return lock_file(self._locks_dir / f"{digest}.lock")

    async def keys(self) -> list[tuple[str, str]]:
        """Every (user, provider) with a stored grant."""
        pairs: list[tuple[str, str]] = []
        for key in await self._file.read():
            user, provider = json.loads(key)
            pairs.append((str(user), str(provider)))
        return pairs
