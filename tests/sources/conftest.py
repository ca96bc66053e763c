"""Fixtures of the source tests: the petstore service on a free port."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from openapi_changing_server import ChangingApi, start_changing_api
from petstore_server import PetStore, start_petstore


@pytest.fixture
def petstore() -> Iterator[PetStore]:
    """The petstore (`petstore_server`), stopped after the test."""
    store = start_petstore()
    try:
        yield store
    finally:
        store.stop()


@pytest.fixture
def changing_api() -> Iterator[ChangingApi]:
    """An API whose OpenAPI document changes between reads (`openapi_changing_server`)."""
    api = start_changing_api()
    try:
        yield api
    finally:
        api.stop()
