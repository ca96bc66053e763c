"""The kits of the three pluggable stores: OAuth tokens, artifacts and standing grants."""

from __future__ import annotations

import asyncio
import hashlib
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from pydantic import SecretStr

from durable_tools.oauth._tokens import StoredToken, TokenStore
from durable_tools.protocol._policy_types import Constraint, StandingGrant
from durable_tools.tools._artifacts import ArtifactStore
from durable_tools.tools._results import ArtifactRef

from ._kit import StoreKit

__all__ = ["ArtifactStoreKit", "GrantStore", "GrantStoreKit", "TokenStoreKit"]

_NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _token(user: str, provider: str, access: str = "at-1", **fields: Any) -> StoredToken:
    return StoredToken(
        grant_ref=f"g-{user}-{provider}",
        user=user,
        provider=provider,
        scopes=("read", "write"),
        access_token=SecretStr(access),
        refresh_token=SecretStr("rt-" + access),
        expires_at=_NOW + timedelta(hours=1),
        created_at=_NOW,
        **fields,
    )


def _same_token(found: StoredToken | None, expected: StoredToken) -> bool:
    return (
        found is not None
        and found.model_dump(exclude={"access_token", "refresh_token"})
        == expected.model_dump(exclude={"access_token", "refresh_token"})
        and found.access_token.get_secret_value() == expected.access_token.get_secret_value()
        and (found.refresh_token.get_secret_value() if found.refresh_token else None)
        == (expected.refresh_token.get_secret_value() if expected.refresh_token else None)
    )


class TokenStoreKit(StoreKit[TokenStore]):
    """What the OAuth broker relies on from a `TokenStore`.

    Args:
        make_store: Makes the store to check (see `StoreKit`).
        shared: The stores it makes share their grants (a file, a database).
        many: Grants written at once by the load check.
    """

    kind = "TokenStore"

    default_many = 200

    async def check_round_trip(self) -> None:
        store = await self.store()
        assert await store.load("alice", "github") is None, "an empty store found a grant"
        token = _token("alice", "github", refreshed_at=_NOW)
        await store.save(token)
        found = await store.load("alice", "github")
        assert _same_token(found, token), f"saved and loaded differ: {found!r}"

    async def check_save_replaces(self) -> None:
        store = await self.store()
        await store.save(_token("alice", "github", "first"))
        await store.save(_token("alice", "github", "second"))
        found = await store.load("alice", "github")
        assert found is not None and found.access_token.get_secret_value() == "second", (
            "a second save of the same user and provider did not replace the first"
        )

    async def check_keys_do_not_collide(self) -> None:
        # A key built by joining with a separator mixes up users and providers that
        # contain it; a key that folds case gives one user another's grant.
        pairs = [
            ("a", "b:c"),
            ("a:b", "c"),
            ("a/b", "c"),
            ("a", "b/c"),
            ("Alice", "github"),
            ("alice", "github"),
            ("alice", "GitHub"),
            ('a", "b', "c"),
            ("user é", "prov"),
        ]
        store = await self.store()
        for number, (user, provider) in enumerate(pairs):
            await store.save(_token(user, provider, f"token-{number}"))
        for number, (user, provider) in enumerate(pairs):
            found = await store.load(user, provider)
            got = found.access_token.get_secret_value() if found else None
            assert got == f"token-{number}", f"({user!r}, {provider!r}) loaded {got!r}"

    async def check_delete(self) -> None:
        store = await self.store()
        token = _token("alice", "github")
        await store.save(token)
        await store.save(_token("bob", "github", "bobs"))
        assert _same_token(await store.delete("alice", "github"), token), (
            "delete did not return what was stored"
        )
        assert await store.load("alice", "github") is None, "a deleted grant is still loaded"
        assert await store.delete("alice", "github") is None, "a second delete found a grant"
        assert await store.load("bob", "github") is not None, "delete removed another grant"

    async def check_shared_between_stores(self) -> None:
        if not self.shared:
            return
        writer, reader = await self.store(), await self.store()
        await writer.save(_token("alice", "github"))
        assert await reader.load("alice", "github") is not None, "another store misses a save"
        await reader.delete("alice", "github")
        assert await writer.load("alice", "github") is None, "another store misses a delete"

    async def check_refresh_lock_is_one_at_a_time(self) -> None:
        # Callers serialise refreshes within their process; across processes the store's
        # lock is all there is. Two store objects stand for two processes, so a shared
        # store's lock must exclude the other object's; any store's lock of one grant must
        # not block another grant's.
        first = await self.store()
        if self.shared:
            second = await self.store()
            inside: list[str] = []
            overlaps: list[str] = []

            async def refresh(store: TokenStore, name: str) -> None:
                async with store.refresh_lock("alice", "github"):
                    if inside:
                        overlaps.append(f"{name} entered while {inside[0]} held the lock")
                    inside.append(name)
                    await asyncio.sleep(0.05)
                    inside.remove(name)

            await asyncio.gather(refresh(first, "first store"), refresh(second, "second store"))
            assert not overlaps, "; ".join(overlaps)
        else:
            second = first
        async with first.refresh_lock("alice", "github"):
            try:
                async with asyncio.timeout(10):
                    async with second.refresh_lock("bob", "github"):
                        pass
            except TimeoutError:
                raise AssertionError("the lock of one grant blocked another's") from None

    async def check_many_grants_at_once(self) -> None:
        store = await self.store()
        tokens = [_token(f"user-{n}", "github", f"t-{n}") for n in range(self.many)]
        await asyncio.gather(*(store.save(token) for token in tokens))
        for token in tokens:
            found = await store.load(token.user, "github")
            assert _same_token(found, token), f"lost {token.user}'s grant among {self.many}"


class ArtifactStoreKit(StoreKit[ArtifactStore]):
    """What tool outputs, snapshots and `durable-tools artifact get` rely on from an
    `ArtifactStore` (its sync methods run in threads here, as the worker runs them).

    Args:
        make_store: Makes the store to check (see `StoreKit`).
        shared: The stores it makes share their artifacts (a directory, a bucket).
        many: Artifacts written at once by the load check.
    """

    kind = "ArtifactStore"

    default_many = 100

    @staticmethod
    async def _put(store: ArtifactStore, data: bytes, media_type: str) -> ArtifactRef:
        return await asyncio.to_thread(store.put, data, media_type)

    @staticmethod
    async def _get(store: ArtifactStore, ref: ArtifactRef) -> bytes:
        return await asyncio.to_thread(store.get, ref)

    async def check_round_trip(self) -> None:
        store = await self.store()
        for data in (bytes(range(256)) * 4096, b"", b"{}"):
            ref = await self._put(store, data, "application/x-kit")
            digest = hashlib.sha256(data).hexdigest()
            assert ref.sha256 == digest, f"sha256 {ref.sha256!r} is not the content's {digest}"
            assert ref.size == len(data), f"size {ref.size} for {len(data)} bytes"
            assert ref.media_type == "application/x-kit", f"media type {ref.media_type!r}"
            got = await self._get(store, ref)
            assert got == data, f"{len(data)} bytes put, {len(got)} other bytes read back"

    async def check_put_is_idempotent(self) -> None:
        store = await self.store()
        first = await self._put(store, b"same content", "text/plain")
        again = await self._put(store, b"same content", "text/plain")
        other = await self._put(store, b"other content", "text/plain")
        assert first == again, f"equal content, two references: {first} and {again}"
        assert other.sha256 != first.sha256 and other.uri != first.uri, "two contents, one ref"

    async def check_unknown_is_a_key_error(self) -> None:
        store = await self.store()
        known = await self._put(store, b"known", "text/plain")
        digest = hashlib.sha256(b"never stored").hexdigest()
        unknown = known.model_copy(update={"sha256": digest, "uri": known.uri[:-64] + digest})
        await self._refused(store, unknown, "an artifact never stored")

    async def check_malformed_digests_are_refused(self) -> None:
        # A digest is a name in the store: one that is a path must never reach a file
        # system (`/dev/zero` would be read for ever) or another key.
        store = await self.store()
        known = await self._put(store, b"known", "text/plain")
        for digest in ("../" + known.sha256, "/etc/hostname", "", "..", "a" * 63, "g" * 64):
            await self._refused(store, known.model_copy(update={"sha256": digest}), digest)

    async def _refused(self, store: ArtifactStore, ref: ArtifactRef, what: str) -> None:
        try:
            async with asyncio.timeout(10):
                data = await self._get(store, ref)
        except KeyError:
            return
        except TimeoutError:
            raise AssertionError(f"reading {what!r} did not end") from None
        raise AssertionError(f"{what!r} gave {len(data)} bytes instead of a KeyError")

    async def check_shared_between_stores(self) -> None:
        if not self.shared:
            return
        writer, reader = await self.store(), await self.store()
        ref = await self._put(writer, b"written by one worker", "text/plain")
        assert await self._get(reader, ref) == b"written by one worker", "another store misses it"

    async def check_many_artifacts_at_once(self) -> None:
        store = await self.store()
        contents = [f"artifact {n} ".encode() * (n + 1) for n in range(self.many)]
        refs = await asyncio.gather(*(self._put(store, data, "text/plain") for data in contents))
        read = await asyncio.gather(*(self._get(store, ref) for ref in refs))
        lost = [n for n, (want, got) in enumerate(zip(contents, read, strict=True)) if want != got]
        assert not lost, f"artifacts {lost[:5]} of {self.many} read back wrong"


class GrantStore(Protocol):
    """What the worker's grant activities and `durable-tools grants` call on a grant store
    (`durable_tools.worker.GrantStore` is the built-in one)."""

    async def all(self) -> list[StandingGrant]:
        """Every grant, revoked and expired ones included."""
        ...

    async def find(
        self,
        identity: str,
        tool: str,
        arguments: dict[str, Any],
        now: datetime | None = None,
        makers: Any = (),
    ) -> StandingGrant | None:
        """The first live grant of `identity` covering the call, made by one of `makers`."""
        ...

    async def save(self, grant: StandingGrant) -> None:
        """Add `grant`, or replace the one with its id."""
        ...

    async def revoke(self, grant_id: str, revoked_by: str) -> StandingGrant:
        """Mark a grant revoked; KeyError for an unknown id."""
        ...


def _grant(grant_id: str, **fields: Any) -> StandingGrant:
    values: dict[str, Any] = {
        "grant_id": grant_id,
        "tool": "refund",
        "scope": "identity",
        "identity": "acme/alice",
        "constraints": (Constraint(path="amount", op="<=", value=100),),
        "granted_by": "bob",
        "granted_at": _NOW,
        "expires_at": _NOW + timedelta(days=1),
        **fields,
    }
    return StandingGrant(**values)


class GrantStoreKit(StoreKit[GrantStore]):
    """What approvals rely on from the store of identity-scoped standing grants.

    Args:
        make_store: Makes the store to check (see `StoreKit`).
        shared: The stores it makes share their grants.
        many: Grants the load check saves.
    """

    kind = "grant store"

    default_many = 200

    async def check_finds_only_within_the_grant(self) -> None:
        store = await self.store()
        grant = _grant("g1")
        await store.save(grant)
        now = _NOW + timedelta(hours=1)
        found = await store.find("acme/alice", "refund", {"amount": 50}, now)
        assert found == grant, f"the grant did not cover a call within it: {found}"
        for identity, tool, arguments, why in (
            ("acme/alice", "refund", {"amount": 500}, "over its constraint"),
            ("acme/alice", "refund", {}, "without the constrained argument"),
            ("acme/alice", "pay", {"amount": 50}, "of another tool"),
            ("acme/bob", "refund", {"amount": 50}, "of another identity"),
            ("acme/alic", "refund", {"amount": 50}, "of a prefix of the identity"),
            ("", "refund", {"amount": 50}, "of nobody (an empty identity)"),
        ):
            found = await store.find(identity, tool, arguments, now)
            assert found is None, f"a call {why} was covered by {found}"

    async def check_expired_and_revoked_grants_cover_nothing(self) -> None:
        store = await self.store()
        await store.save(_grant("g1"))
        late = _NOW + timedelta(days=2)
        assert await store.find("acme/alice", "refund", {"amount": 5}, late) is None, (
            "an expired grant covered a call"
        )
        revoked = await store.revoke("g1", "carol")
        assert revoked.revoked_at is not None and revoked.revoked_by == "carol"
        soon = _NOW + timedelta(hours=1)
        assert await store.find("acme/alice", "refund", {"amount": 5}, soon) is None, (
            "a revoked grant covered a call"
        )
        kept = [g for g in await store.all() if g.grant_id == "g1"]
        assert len(kept) == 1 and kept[0].revoked_at is not None, "a revoked grant was not kept"
        try:
            await store.revoke("no-such-grant", "carol")
        except KeyError:
            pass
        else:
            raise AssertionError("revoking an unknown grant did not raise KeyError")

    async def check_makers_limit_whose_grants_stand(self) -> None:
        store = await self.store()
        await store.save(_grant("g1", granted_by="bob"))
        soon = _NOW + timedelta(hours=1)
        assert await store.find("acme/alice", "refund", {"amount": 5}, soon, ("carol",)) is None
        found = await store.find("acme/alice", "refund", {"amount": 5}, soon, ("BOB",))
        assert found is not None, "a grant by a named maker (written in another case) not found"

    async def check_save_twice_keeps_one(self) -> None:
        store = await self.store()
        await store.save(_grant("g1"))
        await store.save(_grant("g1", reason="again"))
        kept = [g for g in await store.all() if g.grant_id == "g1"]
        assert len(kept) == 1 and kept[0].reason == "again", f"saved twice, kept {kept}"

    async def check_shared_between_stores(self) -> None:
        if not self.shared:
            return
        writer, reader = await self.store(), await self.store()
        await writer.save(_grant("g1"))
        soon = _NOW + timedelta(hours=1)
        assert await reader.find("acme/alice", "refund", {"amount": 5}, soon) is not None
        await reader.revoke("g1", "carol")
        assert await writer.find("acme/alice", "refund", {"amount": 5}, soon) is None

    async def check_many_grants_at_once(self) -> None:
        store = await self.store()
        grants = [_grant(f"g{n}", identity=f"acme/user-{n}") for n in range(self.many)]
        await asyncio.gather(*(store.save(grant) for grant in grants))
        assert len(await store.all()) == self.many, "grants saved at once were lost"
        soon = _NOW + timedelta(hours=1)
        for n in (0, self.many // 2, self.many - 1):
            found = await store.find(f"acme/user-{n}", "refund", {"amount": 5}, soon)
            assert found is not None and found.grant_id == f"g{n}", f"user-{n} found {found}"
