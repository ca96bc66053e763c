"""The worker's telemetry flags: a Prometheus endpoint and JSON logs."""

from __future__ import annotations

import argparse
from typing import Any

from durable_tools.telemetry import (
    LOG_FORMAT_ENV,
    TelemetryPlugin,
    configure_logging,
    prometheus_runtime,
)

from ._errors import CliError
from ._output import echo

__all__ = ["add_telemetry_flags", "worker_telemetry"]


def _port(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError("must be a TCP port (1-65535)")
    return value


def add_telemetry_flags(parser: argparse.ArgumentParser) -> None:
    """`--metrics-port`, `--metrics-host` and `--log-format` on the worker command."""
    parser.add_argument(
        "--metrics-port",
        type=_port,
        metavar="N",
        help="serve the SDK's and durable-tools' metrics at http://HOST:N/metrics (Prometheus)",
    )
    parser.add_argument(
        "--metrics-host", default="127.0.0.1", help="metrics listen address (default 127.0.0.1)"
    )
    parser.add_argument(
        "--log-format",
        choices=("text", "json"),
        default=None,
        help=f"json: one JSON object per log line with run id, call id and tool "
        f"(default {LOG_FORMAT_ENV} or text)",
    )


def worker_telemetry(args: argparse.Namespace) -> dict[str, Any]:
    """Set up logging and metrics as the flags say; returns the options for the client.

    Raises:
        CliError: a bad `DURABLE_TOOLS_LOG_FORMAT`, or the metrics port cannot be bound.
    """
    try:
        json_logs = configure_logging(getattr(args, "log_format", None))
    except ValueError as error:
        raise CliError(str(error)) from None
    port = getattr(args, "metrics_port", None)
    options: dict[str, Any] = {}
    if port:
        host = getattr(args, "metrics_host", "127.0.0.1")
        try:
            options["runtime"] = prometheus_runtime(port, host)
        except ValueError as error:  # the SDK reports a port in use this way
            raise CliError(f"cannot serve metrics on {host}:{port}: {error}") from None
        echo(f"metrics: http://{host}:{port}/metrics", flush=True)
    if port or json_logs:
        # Tracing stays off here: the CLI has no exporter; library users add their own.
        options["plugins"] = [TelemetryPlugin(tracing=False)]
    return options
