"""What every conformance kit shares: named checks, run one at a time or all together."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, Generic, TypeVar

__all__ = ["StoreKit"]

StoreT = TypeVar("StoreT")


class StoreKit(Generic[StoreT]):
    """Named checks of one kind of store, over stores a factory makes.

    A check is an `async def check_<name>(self)` method; it makes the stores it needs with
    `await self.store()`, and raises `AssertionError` with what broke.

    Each check expects to start from an empty store: give each check its own kit over its
    own place (a pytest `tmp_path`, a fresh bucket prefix), as the parametrized test in the
    package's docstring does.

    Args:
        make_store: Makes a store to check: a fresh, empty one each call, or (with
            `shared`) one that sees what the earlier ones of the same kit wrote, as two
            worker processes sharing a file or a bucket would. Sync or async.
        shared: Whether the stores `make_store` makes share what they hold.
        many: Entries the load check writes at once (default: the kit's `default_many`).
    """

    kind: ClassVar[str] = "store"
    default_many: ClassVar[int] = 100

    def __init__(
        self,
        make_store: Callable[[], StoreT | Awaitable[StoreT]],
        *,
        shared: bool = False,
        many: int | None = None,
    ) -> None:
        self._make = make_store
        self.shared = shared
        self.many = many or self.default_many
        self._made: list[StoreT] = []

    @classmethod
    def checks(cls) -> list[str]:
        """The names of the kit's checks, in the order `run` runs them."""
        return [name.removeprefix("check_") for name in dir(cls) if name.startswith("check_")]

    async def store(self) -> StoreT:
        """A store from the factory (closed by `run` when it has a `close`)."""
        made = self._make()
        store: StoreT = await made if inspect.isawaitable(made) else made  # type: ignore[assignment]
        self._made.append(store)
        return store

    async def run(self, check: str | None = None) -> None:
        """Run one check by name, or every check.

        Raises:
            AssertionError: a check failed; the message names the kit and the check.
            ValueError: no check has that name.
        """
        names = self.checks() if check is None else [check]
        for name in names:
            method = getattr(self, f"check_{name}", None)
            if method is None:
                raise ValueError(f"{type(self).__name__} has no check {name!r}: {self.checks()}")
            try:
                await method()
            except AssertionError as error:
                raise AssertionError(f"{self.kind} check {name!r} failed: {error}") from error
            finally:
                await self._close_made()

    async def _close_made(self) -> None:
        made, self._made = self._made, []
        for store in made:
            close: Any = getattr(store, "close", None)
            if close is not None:
                result = close()
                if inspect.isawaitable(result):
                    await result
