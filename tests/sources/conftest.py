"""Fixtures of the source tests: the petstore service on a free port."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from petstore_server import PetStore, start_petstore


@pytest.fixture
def petstore() -> Iterator[PetStore]:
    """The petstore (`petstore_server`), stopped after the test."""
    store = start_petstore()
    try:
        yield store
    finally:
        store.stop()
