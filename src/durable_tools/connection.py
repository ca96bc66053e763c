"""The one way the project builds a Temporal client: configured the way the Temporal CLI is.

Where to connect comes from `temporalio.envconfig`, as for the `temporal` CLI and every
Temporal SDK: a profile from a TOML file (`TEMPORAL_CONFIG_FILE`, else
`~/.config/temporalio/temporal.toml`; profile `TEMPORAL_PROFILE`, else "default"),
overridden by `TEMPORAL_ADDRESS`, `TEMPORAL_NAMESPACE`, `TEMPORAL_API_KEY`, `TEMPORAL_TLS`
and `TEMPORAL_TLS_*`, overridden in turn by explicit arguments (the CLI's flags). With
nothing configured it is the embedded dev server, 127.0.0.1:7233, namespace "default".

`connect` is exported by the top-level `durable_tools`; this module lists what it reads.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from temporalio.client import Client, Plugin
from temporalio.converter import PayloadCodec
from temporalio.envconfig import ClientConfigProfile, ClientConfigTLS, ClientConnectConfig

from durable_tools._data_converter import durable_data_converter
from durable_tools.codec import codec_from_env

__all__ = [
    "DEFAULT_ADDRESS",
    "DEFAULT_NAMESPACE",
    "ConnectionConfigError",
    "ConnectionOptions",
    "connect_config",
    "resolve_address",
    "resolve_namespace",
]

DEFAULT_ADDRESS = "127.0.0.1:7233"
"""The embedded dev server's frontend, used when neither an argument nor the env says more."""
DEFAULT_NAMESPACE = "default"


class ConnectionConfigError(ValueError):
    """The connection settings cannot be used: a bad profile file, an unknown profile or
    an unreadable TLS file. The message says which."""


@dataclass(frozen=True)
class ConnectionOptions:
    """Explicit connection settings; each one left None comes from the env or the profile.

    The fields mirror the `temporal` CLI's flags of the same names.
    """

    address: str | None = None
    """host:port of the frontend (`--address`)."""
    namespace: str | None = None
    """`--namespace`."""
    profile: str | None = None
    """The profile to read from the config file (`--profile`); default `TEMPORAL_PROFILE`."""
    config_file: str | None = None
    """The TOML file (`--config-file`); default `TEMPORAL_CONFIG_FILE` or the CLI's."""
    api_key: str | None = None
    """An API key (`--api-key`); implies TLS."""
    tls: bool | None = None
    """Force TLS on (`--tls`) without any file (a server with a public certificate)."""
    tls_cert_path: str | None = None
    """The client certificate, PEM (`--tls-cert-path`)."""
    tls_key_path: str | None = None
    """The client certificate's private key, PEM (`--tls-key-path`)."""
    tls_ca_path: str | None = None
    """The CA that signed the server's certificate, PEM (`--tls-ca-path`)."""
    tls_server_name: str | None = None
    """The name the server's certificate must carry, if not the address's host."""

    def _tls_overrides(self) -> dict[str, Any]:
        files = {
            "client_cert": self.tls_cert_path,
            "client_private_key": self.tls_key_path,
            "server_root_ca_cert": self.tls_ca_path,
        }
        overrides: dict[str, Any] = {k: Path(v) for k, v in files.items() if v}
        if self.tls_server_name:
            overrides["server_name"] = self.tls_server_name
        if overrides or self.tls:
            overrides["disabled"] = False
        return overrides


def _profile(options: ConnectionOptions, environ: Mapping[str, str] | None) -> ClientConfigProfile:
    if options.config_file and not Path(options.config_file).is_file():
        # envconfig treats a missing file as an empty one; a file named explicitly must exist.
        raise ConnectionConfigError(f"no Temporal config file at {options.config_file!r}")
    try:
        profile = ClientConfigProfile.load(
            options.profile,
            config_source=Path(options.config_file) if options.config_file else None,
            override_env_vars=environ,
        )
    except RuntimeError as error:  # the bridge's ConfigError (a bad file, an unknown profile)
        raise ConnectionConfigError(f"cannot load the Temporal client config: {error}") from None
    changes: dict[str, Any] = {}
    if options.address:
        changes["address"] = options.address
    if options.namespace:
        changes["namespace"] = options.namespace
    if options.api_key:
        changes["api_key"] = options.api_key
    if tls := options._tls_overrides():
        changes["tls"] = dataclasses.replace(profile.tls or ClientConfigTLS(), **tls)
    return dataclasses.replace(profile, **changes)


def connect_config(
    options: ConnectionOptions | None = None, environ: Mapping[str, str] | None = None
) -> ClientConnectConfig:
    """The keyword arguments of `Client.connect` for these options, env and profile.

    Args:
        options: Explicit settings; they win over the env, which wins over the profile.
        environ: The environment to read (default `os.environ`).

    Raises:
        ConnectionConfigError: the profile cannot be loaded or a TLS file cannot be read.
    """
    profile = _profile(options or ConnectionOptions(), environ)
    try:
        config = profile.to_client_connect_config()
    except OSError as error:
        raise ConnectionConfigError(
            f"cannot read a TLS file {error.filename!r}: {error.strerror}"
        ) from None
    config.setdefault("target_host", DEFAULT_ADDRESS)
    config.setdefault("namespace", DEFAULT_NAMESPACE)
    return config


def resolve_address(address: str | None = None, options: ConnectionOptions | None = None) -> str:
    """The frontend address: the argument, else the options, `TEMPORAL_ADDRESS`, the profile,
    else 127.0.0.1:7233."""
    if address:
        return address
    try:
        return connect_config(options)["target_host"]
    except ConnectionConfigError:
        return (options and options.address) or DEFAULT_ADDRESS


def resolve_namespace(
    namespace: str | None = None, options: ConnectionOptions | None = None
) -> str:
    """The namespace: the argument, else the options, `TEMPORAL_NAMESPACE`, the profile,
    else "default"."""
    if namespace:
        return namespace
    try:
        return connect_config(options)["namespace"]
    except ConnectionConfigError:
        return (options and options.namespace) or DEFAULT_NAMESPACE


async def connect(
    address: str | None = None,
    namespace: str | None = None,
    *,
    options: ConnectionOptions | None = None,
    payload_codec: PayloadCodec | None = None,
    plugins: Sequence[Plugin] = (),
    **client_options: Any,
) -> Client:
    """Connect to Temporal with the project's data converter.

    Pydantic models cross the wire as themselves only if every client (and so every worker
    built from one) uses the pydantic data converter; building clients here (or with
    `DurableToolsPlugin`) keeps that true.

    Args:
        address: host:port of the frontend; wins over `options.address`.
        namespace: Wins over `options.namespace`.
        options: Further explicit settings (profile, API key, TLS files); the rest comes
            from the env and the profile file as for the `temporal` CLI.
        payload_codec: Encodes every payload (e.g. encryption) before it reaches the server;
            default: the encryption codec `DURABLE_TOOLS_CODEC_KEYS` (or a key file)
            configures, so every command and worker of a deployment encrypts alike.
        plugins: More client plugins, e.g. `DurableToolsPlugin(registry)` to have every
            worker built from this client run the agent workflow and the tools.
        **client_options: More `Client.connect` options (e.g. `runtime=` for metrics).

    Raises:
        ConnectionConfigError: the profile cannot be loaded or a TLS file cannot be read.
    """
    if payload_codec is None:
        payload_codec = codec_from_env()
    options = options or ConnectionOptions()
    options = dataclasses.replace(
        options,
        address=address or options.address,
        namespace=namespace or options.namespace,
    )
    return await Client.connect(
        **connect_config(options),
        data_converter=durable_data_converter(payload_codec),
        plugins=list(plugins),
        **client_options,
    )
