"""User errors of the command line, and turning library errors into them."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from durable_tools.codec import CodecKeyError
from durable_tools.connection import (
    ConnectionConfigError,
    ConnectionOptions,
    connect,
    connect_config,
    resolve_address,
)

from ._flags import connection_options

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
        "(or `make demo`), or set --address / TEMPORAL_ADDRESS (and TLS or an API key for a "
        "remote server)"
    )


def _why(error: BaseException, *, tls: bool = False) -> str:
    """A short reason from a connection error (the SDK's own text is a long Rust trace).

    With TLS on, a server that rejects the client's certificate may end the connection
    after the handshake, and the SDK then reports a reset or a closed stream rather than a
    TLS error: anything but a refused connection is then most likely TLS or the key.
    """
    text = str(error).lower()
    if "refused" in text:
        return "connection refused"
    if tls or any(word in text for word in ("tls", "certificate", "handshake", "unauthenticated")):
        return (
            "the TLS handshake or authentication failed: check --tls-ca-path, "
            "--tls-cert-path/--tls-key-path (or TEMPORAL_TLS_*) and the API key"
        )
    return ""


async def connect_or_explain(
    address: str | None = None,
    namespace: str | None = None,
    *,
    flags: argparse.Namespace | None = None,
    **client_options: Any,
) -> Client:
    """A client, or a `CliError` saying why not (no server, bad TLS, a bad profile).

    Args:
        address: Wins over everything (the embedded server's own address).
        namespace: Wins over the flags, env and profile.
        flags: The command's parsed arguments: their connection flags (see `_flags`).
        **client_options: More `connect` options (`plugins=`, `runtime=`).
    """
    options = connection_options(flags) if flags is not None else ConnectionOptions()
    options = dataclasses.replace(
        options, address=address or options.address, namespace=namespace or options.namespace
    )
    try:
        config = connect_config(options)
    except ConnectionConfigError as error:
        raise CliError(str(error)) from None
    target = config["target_host"]
    try:
        return await asyncio.wait_for(connect(options=options, **client_options), CONNECT_TIMEOUT)
    except CodecKeyError as error:
        raise CliError(f"payload encryption is configured but unusable: {error}") from None
    except TimeoutError:
        raise no_server(target, "timed out") from None
    except (RuntimeError, RPCError, OSError) as error:
        raise no_server(target, _why(error, tls=bool(config.get("tls")))) from None


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
