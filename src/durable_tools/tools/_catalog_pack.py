"""A run's catalog in compact form: the specs as compressed JSON.

A catalog crosses into history once (the catalog activity's result) and again with
every continue-as-new. As plain JSON, GitHub's REST API (1,223 operations) is 2.8 MB,
over Temporal's 2 MiB payload limit; compressed it is about 220 kB, because specs
repeat the same keys, policies and parameter descriptions. The workflow unpacks it in
memory (zlib and JSON are deterministic), so every stage keeps reading plain specs.
"""

from __future__ import annotations

import base64
import zlib

from pydantic import BaseModel, TypeAdapter

from ._spec import ToolSpec

__all__ = ["CATALOG_PACKED_ACTIVITY", "CatalogTooLarge", "PackedCatalog", "pack", "unpack"]

CATALOG_PACKED_ACTIVITY = "durable_tools.catalog_packed"
"""The catalog activity that answers with a `PackedCatalog`."""

_SPECS: TypeAdapter[list[ToolSpec]] = TypeAdapter(list[ToolSpec])


class CatalogTooLarge(ValueError):
    """A catalog that even compressed would not fit in one payload."""


class PackedCatalog(BaseModel):
    """The specs of a catalog as base64 of zlib-compressed JSON, with their figures."""

    data: str
    """base64 of the zlib-compressed JSON list of specs."""
    tools: int
    """How many specs it holds."""
    json_bytes: int
    """Size of the specs as plain JSON."""

    def describe(self) -> str:
        """The figures, for events and errors: `1,223 tools, 2,760,066 bytes as JSON ...`."""
        return (
            f"{self.tools:,} tools, {self.json_bytes:,} bytes as JSON, "
            f"{len(self.data):,} bytes packed"
        )


def pack(specs: list[ToolSpec], *, budget: int) -> PackedCatalog:
    """`specs` packed, refused when the packed form is over `budget` bytes.

    Raises:
        CatalogTooLarge: even compressed, the catalog is over `budget`; the message gives
            the figures and what to do.
    """
    raw = _SPECS.dump_json(specs)
    packed = PackedCatalog(
        data=base64.b64encode(zlib.compress(raw, 9)).decode("ascii"),
        tools=len(specs),
        json_bytes=len(raw),
    )
    if len(packed.data) > budget:
        raise CatalogTooLarge(
            f"the run's tool catalog is too large to start a run: {packed.describe()}, over "
            f"the {budget:,}-byte payload budget; give the agent fewer tools "
            "(AgentConfig.tools, scopes, or a smaller registry)"
        )
    return packed


def unpack(packed: PackedCatalog) -> list[ToolSpec]:
    """The specs `pack` packed."""
    return _SPECS.validate_json(zlib.decompress(base64.b64decode(packed.data)))
