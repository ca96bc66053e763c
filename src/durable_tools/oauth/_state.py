"""Pending authorizations: what a `state` stands for until its callback arrives.

A pending authorization binds a random, single-use `state` to the run and call that asked
(workflow id, call id), the user, the provider and the scopes, and keeps the PKCE verifier
on the worker side. Callers outside the stores see an `AuthorizationRequest`, which has no
verifier.
"""

from __future__ import annotations

import asyncio
import os
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from ._records import PendingAuthorization
from ._storage import EncryptedJsonFile, load_key

__all__ = ["FileStateStore", "MemoryStateStore", "StateStore", "UndeliveredOutcomes"]


@runtime_checkable
class StateStore(Protocol):
    """Where pending authorizations wait for their callback."""

    async def put(self, pending: PendingAuthorization) -> None:
        """Keep a pending authorization under its state."""
        ...

    async def take(self, state: str) -> PendingAuthorization | None:
        """Remove and return the pending authorization of `state` (None if unknown).

        Atomic: of concurrent takers of one state, exactly one gets it.
        """
        ...

    async def purge(self, now: datetime) -> int:
        """Drop the pending authorizations expired by `now`; return how many."""
        ...


@runtime_checkable
class UndeliveredOutcomes(Protocol):
    """A state store that can list the outcomes a run was not told yet, so a restarted
    callback server resumes telling them (both built-in stores can)."""

    async def undelivered(self) -> list[str]:
        """The states whose record holds an outcome not delivered yet."""
        ...


class MemoryStateStore:
    """Pending authorizations in this process's memory (tests; one-process setups)."""

    def __init__(self) -> None:
        self._pending: dict[str, PendingAuthorization] = {}
        self._lock = asyncio.Lock()

    async def put(self, pending: PendingAuthorization) -> None:
        async with self._lock:
            self._pending[pending.state] = pending

    async def take(self, state: str) -> PendingAuthorization | None:
        async with self._lock:
            return self._pending.pop(state, None)

    async def undelivered(self) -> list[str]:
        async with self._lock:
            return [state for state, pending in self._pending.items() if pending.outcome]

    async def purge(self, now: datetime) -> int:
        async with self._lock:
            dead = [s for s, p in self._pending.items() if p.expired(now)]
            for state in dead:
                del self._pending[state]
            return len(dead)


class FileStateStore:
    """Pending authorizations in a Fernet-encrypted file, shared between processes.

    The worker that starts an authorization and the callback server that completes it may
    be different processes on one host: both open the same file.

    Args:
        path: The encrypted file.
        key: Fernet key(s); default the `DURABLE_TOOLS_TOKEN_KEY` environment variable.
    """

    def __init__(self, path: str | os.PathLike[str], key: str | bytes | None = None) -> None:
        self._file = EncryptedJsonFile(path, load_key(key))

    @property
    def path(self) -> os.PathLike[str]:
        """The encrypted file."""
        return self._file.path

    async def put(self, pending: PendingAuthorization) -> None:
        record = pending.to_record()

        def change(data: dict[str, Any]) -> None:
            data[pending.state] = record

        await self._file.update(change)

    async def take(self, state: str) -> PendingAuthorization | None:
        def change(data: dict[str, Any]) -> dict[str, Any] | None:
            found: dict[str, Any] | None = data.pop(state, None)
            return found

        record = await self._file.update(change)
        return PendingAuthorization.model_validate(record) if record is not None else None

    async def undelivered(self) -> list[str]:
        data = await self._file.read()
        return [state for state, record in data.items() if record.get("outcome")]

    async def purge(self, now: datetime) -> int:
        def change(data: dict[str, Any]) -> int:
            dead = [
                state
                for state, record in data.items()
                if PendingAuthorization.model_validate(record).expired(now)
            ]
            for state in dead:
                del data[state]
            return len(dead)

        return await self._file.update(change)
