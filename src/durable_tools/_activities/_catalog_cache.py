"""Packed catalogs a worker made lately, shared by the runs that ask for the same one.

Packing a catalog of thousands of tools (compressing it, stemming every description for
search) takes seconds. When a registry changes while hundreds of runs wait, each of them
reads its catalog again at its next model turn: runs with the same request (identity,
scopes, tool names) and the same registry version get one packing, done once even when
they ask at the same moment. Entries live a few seconds only: a tool's `visible_to` rule
may read state outside the registry, which no version covers.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable

from durable_tools.tools._catalog_pack import PackedCatalog

__all__ = ["PackedCatalogs"]

_TTL_SECONDS = 5.0
_MAX_ENTRIES = 64


class PackedCatalogs:
    """Recent packed catalogs by (registry version, request), with packings under way."""

    def __init__(self) -> None:
        self._entries: OrderedDict[tuple[str, str], tuple[float, asyncio.Future[PackedCatalog]]]
        self._entries = OrderedDict()

    async def get(
        self, key: tuple[str, str], make: Callable[[], Awaitable[PackedCatalog]]
    ) -> PackedCatalog:
        """The catalog for `key`: a recent one, the one being packed, or `make()`'s.

        A packing that fails is not kept: each caller waiting on it gets its error, and
        the next asks again.
        """
        now = time.monotonic()
        found = self._entries.get(key)
        if found is not None and now - found[0] < _TTL_SECONDS:
            return (await asyncio.shield(found[1])).model_copy()
        future: asyncio.Future[PackedCatalog] = asyncio.get_running_loop().create_future()
        self._entries[key] = (now, future)
        while len(self._entries) > _MAX_ENTRIES:
            self._entries.popitem(last=False)
        try:
            packed = await make()
        except BaseException as error:
            if self._entries.get(key, (0.0, None))[1] is future:
                del self._entries[key]
            if isinstance(error, Exception):
                future.set_exception(error)
                future.exception()  # retrieved: no "never retrieved" warning without waiters
            else:
                future.cancel()
            raise
        future.set_result(packed)
        return packed.model_copy()
