"""The packed catalog: what crosses into history instead of the plain list of specs."""

from __future__ import annotations

import hashlib

import pytest
from pydantic import TypeAdapter

from durable_tools import ToolSpec
from durable_tools.protocol._limits import PAYLOAD_BUDGET_BYTES
from durable_tools.tools._catalog_pack import CatalogTooLarge, pack, unpack
from github_support import github_registry


def test_round_trip_keeps_every_field() -> None:
    specs = [
        ToolSpec(name="a", description="first", tags=("x",), loading="deferred"),
        ToolSpec(name="b", description="é ✓", input_schema={"type": "object", "properties": {}}),
    ]
    packed = pack(specs, budget=PAYLOAD_BUDGET_BYTES)
    assert unpack(packed) == specs
    assert packed.tools == 2 and packed.json_bytes > 0
    assert unpack(pack([], budget=100)) == []


@pytest.mark.slow  # loading GitHub's 13 MB document takes up to a minute when busy
def test_githubs_catalog_is_over_the_limit_plain_and_well_under_it_packed() -> None:
    specs = github_registry("http://127.0.0.1:9").catalog(granted_scopes=[])
    plain = len(TypeAdapter(list[ToolSpec]).dump_json(specs))
    packed = pack(specs, budget=PAYLOAD_BUDGET_BYTES)
    print(f"GitHub catalog: {packed.describe()}")
    assert plain > 2 * 1024 * 1024  # what made the run retry for ever
    assert len(packed.data) < PAYLOAD_BUDGET_BYTES // 4
    assert [s.name for s in unpack(packed)] == [s.name for s in specs]


def test_too_large_even_packed_is_refused_with_the_figures() -> None:
    # Hex digests barely compress: 200 tools of 8 kB each stay over 1 MB packed.
    noise = [
        "".join(hashlib.sha256(f"{i}-{j}".encode()).hexdigest() for j in range(128))
        for i in range(200)
    ]
    specs = [ToolSpec(name=f"t{i}", description=text) for i, text in enumerate(noise)]
    with pytest.raises(CatalogTooLarge) as caught:
        pack(specs, budget=1_000_000)
    message = str(caught.value)
    assert "200 tools" in message and "1,000,000-byte payload budget" in message
    assert "bytes as JSON" in message and "bytes packed" in message
