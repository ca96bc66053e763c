"""Flags shared by many commands: the `temporal` CLI's connection flags, `-o json` and an
embedded loop's `--prefix`."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from durable_tools.connection import ConnectionOptions

__all__ = ["add_connection_flags", "add_json_flag", "add_prefix_flag", "connection_options"]

_CONNECTION_FIELDS = (
    "address",
    "namespace",
    "profile",
    "config_file",
    "api_key",
    "tls",
    "tls_cert_path",
    "tls_key_path",
    "tls_ca_path",
    "tls_server_name",
)


def add_connection_flags(parser: argparse.ArgumentParser) -> None:
    """The `temporal` CLI's connection flags; each one left out comes from the env/profile."""
    group = parser.add_argument_group(
        "Temporal connection",
        "As for the `temporal` CLI: flags win over TEMPORAL_* variables, which win over "
        "the profile in TEMPORAL_CONFIG_FILE (default ~/.config/temporalio/temporal.toml).",
    )
    group.add_argument("--address", help="host:port (env TEMPORAL_ADDRESS; default 127.0.0.1:7233)")
    group.add_argument("-n", "--namespace", help="env TEMPORAL_NAMESPACE; default default")
    group.add_argument("--profile", help="profile of the config file (env TEMPORAL_PROFILE)")
    group.add_argument("--config-file", metavar="FILE", help="env TEMPORAL_CONFIG_FILE")
    group.add_argument(
        "--api-key", metavar="KEY", help="env TEMPORAL_API_KEY; implies TLS (prefer the env)"
    )
    group.add_argument(
        "--tls",
        action="store_true",
        default=None,
        help="use TLS without any file (env TEMPORAL_TLS)",
    )
    group.add_argument("--tls-cert-path", metavar="PEM", help="client certificate for mTLS")
    group.add_argument("--tls-key-path", metavar="PEM", help="client certificate's key for mTLS")
    group.add_argument("--tls-ca-path", metavar="PEM", help="CA of the server's certificate")
    group.add_argument("--tls-server-name", metavar="NAME", help="name on the server's certificate")


def connection_options(args: argparse.Namespace) -> ConnectionOptions:
    """The connection flags given on the command line (the absent ones are None)."""
    return ConnectionOptions(**{name: getattr(args, name, None) for name in _CONNECTION_FIELDS})


class _OutputFormat(argparse.Action):
    """`-o json` sets the same flag as `--json` (and `-o text` clears it), as `temporal -o`."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, values == "json")


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    """`--json`, and `-o/--output {text,json}` as its synonym."""
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument(
        "-o",
        "--output",
        dest="json",
        choices=("text", "json"),
        action=_OutputFormat,
        help="output format; `-o json` is --json",
    )


def add_prefix_flag(parser: argparse.ArgumentParser) -> None:
    """`--prefix`: RUN_ID is a workflow of the user's with an agent loop embedded in it."""
    parser.add_argument(
        "--prefix",
        default="",
        metavar="PREFIX",
        help="for an agent loop embedded in a workflow of yours: RUN_ID is that workflow's "
        "id and PREFIX the loop's handler prefix (AgentLoop.register_handlers)",
    )
