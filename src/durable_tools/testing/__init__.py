"""Conformance kits for the pluggable stores: run them against your own implementation.

A worker keeps OAuth grants in a `TokenStore`, large outputs in an `ArtifactStore` and
identity-scoped approval grants in a grant store. Each kit states, as named checks, what
the rest of durable-tools relies on from such a store (round trips, keys that cannot
collide, one refresh at a time, refusing what is not its own, holding up under load); the
built-in stores run the same kits in the project's tests.

    import pytest
    from durable_tools.testing import TokenStoreKit

    @pytest.mark.parametrize("check", TokenStoreKit.checks())
    async def test_my_token_store(check: str, tmp_path) -> None:
        await TokenStoreKit(lambda: MyTokenStore(tmp_path), shared=True).run(check)

No test framework is needed: a failed check raises `AssertionError` naming what broke.
"""

from ._kit import StoreKit
from ._stores import ArtifactStoreKit, GrantStoreKit, TokenStoreKit

__all__ = ["ArtifactStoreKit", "GrantStoreKit", "StoreKit", "TokenStoreKit"]
