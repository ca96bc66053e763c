"""A run's catalog in compact form: the specs as compressed JSON.

A catalog crosses into history once (the catalog activity's result) and again with
every continue-as-new. As plain JSON, GitHub's REST API (1,223 operations) is 2.8 MB,
over Temporal's 2 MiB payload limit; compressed it is about 220 kB, because specs
repeat the same keys, policies and parameter descriptions. The workflow unpacks it in
memory (zlib and JSON are deterministic), so every stage keeps reading plain specs.
"""

from __future__ import annotations

import base64
import json
import zlib

from pydantic import BaseModel, TypeAdapter

from ._bm25 import Stems, spec_terms
from ._spec import ToolSpec

SpecTerms = tuple[dict[str, int], dict[str, int]]

__all__ = [
    "CATALOG_PACKED_ACTIVITY",
    "CatalogTooLarge",
    "PackedCatalog",
    "SpecTerms",
    "pack",
    "unpack",
    "unpack_terms",
]

CATALOG_PACKED_ACTIVITY = "durable_tools.catalog_packed"
"""The catalog activity that answers with a `PackedCatalog`."""

_SPECS: TypeAdapter[list[ToolSpec]] = TypeAdapter(list[ToolSpec])
_TERMS: TypeAdapter[dict[str, SpecTerms]] = TypeAdapter(dict[str, SpecTerms])


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
    terms: str | None = None
    """base64 of zlib-compressed JSON: each spec's search terms (`_bm25.spec_terms`) by
    name. Stemming a thousand descriptions takes seconds, too long for a workflow task
    (Temporal's deadlock detector allows two), so the worker does it here."""
    version: str | None = None
    """The registry version the catalog came from (`ToolRegistry.version`). Set by workers
    that keep running runs' catalogs current: a run whose catalog has one reads it again
    when a worker reports another. None in catalogs of older workers: those runs keep
    theirs, and replay as they ran."""

    def describe(self) -> str:
        """The figures, for events and errors: `1,223 tools, 2,760,066 bytes as JSON ...`."""
        return (
            f"{self.tools:,} tools, {self.json_bytes:,} bytes as JSON, "
            f"{len(self.data) + len(self.terms or ''):,} bytes packed"
        )


def pack(specs: list[ToolSpec], *, budget: int) -> PackedCatalog:
    """`specs` packed, refused when the packed form is over `budget` bytes.

    Raises:
        CatalogTooLarge: even compressed, the catalog is over `budget`; the message gives
            the figures and what to do.
    """
    raw = _SPECS.dump_json(specs)
    packed = PackedCatalog(data=_squeeze(raw), tools=len(specs), json_bytes=len(raw))
    if len(packed.data) <= budget:  # else refused before the work on the terms
        stems = Stems()  # this catalog's own: see `Stems`
        index = {spec.name: spec_terms(spec, stems) for spec in specs}
        packed.terms = _squeeze(json.dumps(index, separators=(",", ":")).encode())
    if len(packed.data) + len(packed.terms or "") > budget:
        raise CatalogTooLarge(
            f"the run's tool catalog is too large to start a run: {packed.describe()}, over "
            f"the {budget:,}-byte payload budget; give the agent fewer tools "
            "(AgentConfig.tools, scopes, or a smaller registry)"
        )
    return packed


def unpack(packed: PackedCatalog) -> list[ToolSpec]:
    """The specs `pack` packed."""
    return _SPECS.validate_json(zlib.decompress(base64.b64decode(packed.data)))


def unpack_terms(packed: PackedCatalog) -> dict[str, SpecTerms]:
    """Each spec's search terms, by name; empty when the worker sent none."""
    if packed.terms is None:
        return {}
    return _TERMS.validate_json(zlib.decompress(base64.b64decode(packed.terms)))


def _squeeze(raw: bytes) -> str:
    return base64.b64encode(zlib.compress(raw, 9)).decode("ascii")
