"""The one way the project builds a Temporal client."""

from __future__ import annotations

import os
from typing import Any

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

__all__ = [
    "DEFAULT_ADDRESS",
    "DEFAULT_NAMESPACE",
    "connect",
    "resolve_address",
    "resolve_namespace",
]

DEFAULT_ADDRESS = "127.0.0.1:7233"
"""The embedded dev server's frontend, used when neither an argument nor the env says more."""
DEFAULT_NAMESPACE = "default"


def resolve_address(address: str | None = None) -> str:
    """The frontend address: the argument, else `TEMPORAL_ADDRESS`, else 127.0.0.1:7233."""
    return address or os.environ.get("TEMPORAL_ADDRESS") or DEFAULT_ADDRESS


def resolve_namespace(namespace: str | None = None) -> str:
    """The namespace: the argument, else `TEMPORAL_NAMESPACE`, else "default"."""
    return namespace or os.environ.get("TEMPORAL_NAMESPACE") or DEFAULT_NAMESPACE


async def connect(
    address: str | None = None, namespace: str | None = None, **options: Any
) -> Client:
    """Connect to Temporal with the project's data converter.

    Pydantic models cross the wire as themselves only if every client (and so every worker
    built from one) uses `pydantic_data_converter`; building clients here keeps that true.

    Args:
        address: host:port of the frontend; default `TEMPORAL_ADDRESS` or 127.0.0.1:7233.
        namespace: default `TEMPORAL_NAMESPACE` or "default".
        **options: More `Client.connect` options (e.g. `runtime=`, `plugins=`).
    """
    return await Client.connect(
        resolve_address(address),
        namespace=resolve_namespace(namespace),
        data_converter=pydantic_data_converter,
        **options,
    )
