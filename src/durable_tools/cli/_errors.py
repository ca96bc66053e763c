"""User errors of the command line, and turning library errors into them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from durable_tools.connection import connect, resolve_address, resolve_namespace

__all__ = ["CliError", "connect_or_explain", "translate_rpc_errors"]

CONNECT_TIMEOUT = 10.0


class CliError(Exception):
    """An error the user can fix: printed as one line, without a traceback.

    Args:
        message: What went wrong and what to do.
        exit_code: The process exit code (2 unless said otherwise).
    """

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def no_server(address: str, detail: str = "") -> CliError:
    """The message for an address where nothing answers."""
    why = f" ({detail})" if detail else ""
    return CliError(
        f"no Temporal server answers at {address}{why}; start one with `durable-tools server` "
        "(or `make demo`), or set TEMPORAL_ADDRESS"
    )


async def connect_or_explain(
    address: str | None = None, namespace: str | None = None, **options: Any
) -> Client:
    """A client, or a `CliError` saying no server answers and how to start one."""
    target = resolve_address(address)
    try:
        return await asyncio.wait_for(
            connect(target, resolve_namespace(namespace), **options), CONNECT_TIMEOUT
        )
    except TimeoutError:
        raise no_server(target, "timed out") from None
    except (RuntimeError, RPCError, OSError) as error:
        detail = "connection refused" if "refused" in str(error).lower() else ""
        raise no_server(target, detail) from None


@asynccontextmanager
async def translate_rpc_errors(run_id: str | None = None) -> AsyncIterator[None]:
    """Turn the server's "not found" and "unavailable" answers into `CliError`s."""
    try:
        yield
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            what = f"no run {run_id!r}" if run_id else "not found"
            raise CliError(f"{what} in this namespace ({error.message})") from None
        if error.status == RPCStatusCode.UNAVAILABLE:
            raise no_server(resolve_address(), error.message) from None
        if error.status == RPCStatusCode.INVALID_ARGUMENT:
            raise CliError(f"the server refused the request: {error.message}") from None
        raise
