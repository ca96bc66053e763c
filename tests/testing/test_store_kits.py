"""The conformance kits of `durable_tools.testing`: every built-in store passes them, and
stores with the faults they look for fail them, naming the fault."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet

from durable_tools.oauth import FileTokenStore, MemoryTokenStore, StoredToken
from durable_tools.testing import ArtifactStoreKit, GrantStoreKit, TokenStoreKit
from durable_tools.tools import ArtifactRef, FileSystemArtifactStore, InMemoryArtifactStore
from durable_tools.worker import GrantStore

KEY = Fernet.generate_key()


@pytest.mark.parametrize("check", TokenStoreKit.checks())
async def test_the_memory_token_store_conforms(check: str) -> None:
    await TokenStoreKit(MemoryTokenStore).run(check)


@pytest.mark.parametrize("check", TokenStoreKit.checks())
async def test_the_file_token_store_conforms(check: str, tmp_path: Path) -> None:
    kit = TokenStoreKit(lambda: FileTokenStore(tmp_path / "tokens.enc", KEY), shared=True)
    await kit.run(check)


@pytest.mark.parametrize("check", ArtifactStoreKit.checks())
async def test_the_memory_artifact_store_conforms(check: str) -> None:
    await ArtifactStoreKit(InMemoryArtifactStore).run(check)


@pytest.mark.parametrize("check", ArtifactStoreKit.checks())
async def test_the_file_artifact_store_conforms(check: str, tmp_path: Path) -> None:
    kit = ArtifactStoreKit(lambda: FileSystemArtifactStore(tmp_path / "artifacts"), shared=True)
    await kit.run(check)


@pytest.mark.parametrize("check", GrantStoreKit.checks())
async def test_the_grant_store_conforms(check: str, tmp_path: Path) -> None:
    await GrantStoreKit(lambda: GrantStore(tmp_path / "grants.json"), shared=True).run(check)


async def test_an_async_factory_and_a_store_with_close_are_fine() -> None:
    closed: list[str] = []

    class Closing(MemoryTokenStore):
        async def close(self) -> None:
            closed.append("closed")

    async def make() -> Closing:
        return Closing()

    await TokenStoreKit(make).run("round_trip")
    assert closed == ["closed"]
    with pytest.raises(ValueError, match="no check 'nope'"):
        await TokenStoreKit(make).run("nope")


# ------------------------------------------------------------- stores with faults


class JoinedKeyTokenStore(MemoryTokenStore):
    """Keys grants by `user:provider`: `("a", "b:c")` and `("a:b", "c")` are one grant."""

    def __init__(self) -> None:
        super().__init__()
        self.by_key: dict[str, StoredToken] = {}

    async def load(self, user: str, provider: str) -> StoredToken | None:
        return self.by_key.get(f"{user}:{provider}".lower())

    async def save(self, token: StoredToken) -> None:
        self.by_key[f"{token.user}:{token.provider}".lower()] = token


class FileWithoutLocks(FileTokenStore):
    """Shares a file between processes but locks nothing."""

    @contextlib.asynccontextmanager
    async def _no_lock(self) -> AsyncIterator[None]:
        yield

    def refresh_lock(self, user: str, provider: str) -> Any:
        return self._no_lock()


class PathDigestStore(InMemoryArtifactStore):
    """Reads any digest it is given as a path under its root."""

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root = root

    def get(self, ref: ArtifactRef) -> bytes:
        try:
            return (self.root / ref.sha256).read_bytes()
        except OSError:
            return super().get(ref)


class ForgetfulGrantStore(GrantStore):
    """Ignores the identity when finding a grant."""

    async def find(self, identity: str, tool: str, arguments: dict[str, Any], *rest: Any) -> Any:
        grants = [g.model_copy(update={"identity": identity}) for g in await self.all()]
        from durable_tools.policy._grants import find_grant

        return find_grant(grants, tool, arguments, *rest) if identity else None


async def test_the_kits_name_the_faults_they_find(tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match=r"keys_do_not_collide.*\('a', 'b:c'\)"):
        await TokenStoreKit(JoinedKeyTokenStore).run("keys_do_not_collide")
    unlocked = TokenStoreKit(lambda: FileWithoutLocks(tmp_path / "t.enc", KEY), shared=True)
    with pytest.raises(AssertionError, match="entered while first store held the lock"):
        await unlocked.run("refresh_lock_is_one_at_a_time")
    (tmp_path / "secret.txt").write_text("not an artifact")
    (tmp_path / "store").mkdir()
    leaky = ArtifactStoreKit(lambda: PathDigestStore(tmp_path / "store"))
    with pytest.raises(AssertionError, match="'/etc/hostname' gave"):
        await leaky.run("malformed_digests_are_refused")
    forgetful = GrantStoreKit(lambda: ForgetfulGrantStore(tmp_path / "g.json"))
    with pytest.raises(AssertionError, match="of another identity"):
        await forgetful.run("finds_only_within_the_grant")


def test_every_check_is_listed_once_in_order() -> None:
    for kit in (ArtifactStoreKit, GrantStoreKit, TokenStoreKit):
        names = kit.checks()
        assert names == sorted(set(names)) and len(names) >= 5
        assert all(callable(getattr(kit, f"check_{name}")) for name in names)
