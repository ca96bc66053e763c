"""Connecting the way the `temporal` CLI does: profiles, TEMPORAL_* env, flags, real TLS.

TLS is real: the dev server has no TLS flags, so a TLS-terminating proxy
(tests/tls_proxy.py, a throwaway CA, ALPN h2) sits in front of it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

import cli_support
from cli_support import cli
from durable_tools import connect
from durable_tools.connection import (
    DEFAULT_ADDRESS,
    ConnectionConfigError,
    ConnectionOptions,
    connect_config,
)
from tls_proxy import Pki, TlsProxy, make_pki

cli_env = cli_support.cli_env  # the fixture, by the name the tests ask for

TEMPORAL_VARIABLES = (
    "TEMPORAL_ADDRESS",
    "TEMPORAL_NAMESPACE",
    "TEMPORAL_API_KEY",
    "TEMPORAL_PROFILE",
    "TEMPORAL_CONFIG_FILE",
    "TEMPORAL_TLS",
    "TEMPORAL_TLS_CLIENT_CERT_PATH",
    "TEMPORAL_TLS_CLIENT_KEY_PATH",
    "TEMPORAL_TLS_SERVER_CA_CERT_PATH",
    "TEMPORAL_TLS_SERVER_NAME",
)


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No TEMPORAL_* settings from the machine; no default config file either."""
    for name in TEMPORAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TEMPORAL_CONFIG_FILE", str(tmp_path / "absent.toml"))


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return make_pki(tmp_path / "pki")


def upstream(env: WorkflowEnvironment) -> str:
    return env.client.service_client.config.target_host


def write_profiles(path: Path, pki: Pki, address: str, namespace: str) -> Path:
    path.write_text(
        f'[profile.default]\naddress = "127.0.0.1:1"\n\n'
        f'[profile.secure]\naddress = "{address}"\nnamespace = "{namespace}"\n'
        f"[profile.secure.tls]\n"
        f'server_ca_cert_path = "{pki.ca}"\n'
        f'client_cert_path = "{pki.client_cert}"\n'
        f'client_key_path = "{pki.client_key}"\n'
        f'server_name = "localhost"\n'
    )
    return path


# ------------------------------------------------------------------ precedence, no server


def test_nothing_configured_is_the_embedded_server(clean_env: None) -> None:
    config = connect_config()
    assert config["target_host"] == DEFAULT_ADDRESS
    assert config["namespace"] == "default"
    assert "tls" not in config


def test_flags_win_over_env_which_wins_over_the_profile(tmp_path: Path, pki: Pki) -> None:
    profiles = write_profiles(tmp_path / "temporal.toml", pki, "profile-host:7233", "from-profile")
    environ = {"TEMPORAL_CONFIG_FILE": str(profiles), "TEMPORAL_PROFILE": "secure"}
    from_profile = connect_config(environ=environ)
    assert (from_profile["target_host"], from_profile["namespace"]) == (
        "profile-host:7233",
        "from-profile",
    )
    environ["TEMPORAL_NAMESPACE"] = "from-env"
    assert connect_config(environ=environ)["namespace"] == "from-env"
    flagged = connect_config(ConnectionOptions(namespace="from-flag"), environ=environ)
    assert flagged["namespace"] == "from-flag"
    assert flagged["target_host"] == "profile-host:7233"


def test_tls_flags_replace_the_profile_files_one_by_one(tmp_path: Path, pki: Pki) -> None:
    profiles = write_profiles(tmp_path / "temporal.toml", pki, "h:1", "ns")
    other_ca = tmp_path / "other-ca.pem"
    other_ca.write_bytes(b"-----BEGIN CERTIFICATE-----\nother\n")
    config = connect_config(
        ConnectionOptions(profile="secure", config_file=str(profiles), tls_ca_path=str(other_ca)),
        environ={},
    )
    tls = config["tls"]
    assert not isinstance(tls, bool)
    assert tls.server_root_ca_cert == other_ca.read_bytes()
    assert tls.client_cert == pki.client_cert.read_bytes()  # still the profile's
    assert tls.domain == "localhost"


def test_api_key_turns_tls_on(clean_env: None) -> None:
    config = connect_config(ConnectionOptions(api_key="k-123"))
    assert config["api_key"] == "k-123"
    assert config["tls"] is True


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (ConnectionOptions(profile="nope"), "Profile 'nope' not found"),
        (ConnectionOptions(config_file="/nonexistent/temporal.toml"), "no Temporal config file"),
        (ConnectionOptions(tls_ca_path="/nonexistent/ca.pem"), "/nonexistent/ca.pem"),
    ],
)
def test_unusable_settings_say_what_is_wrong(
    clean_env: None, options: ConnectionOptions, message: str
) -> None:
    with pytest.raises(ConnectionConfigError, match=message):
        connect_config(options)


# ------------------------------------------------------------------ real TLS


async def test_env_tls_with_a_client_certificate_through_the_proxy(
    env: WorkflowEnvironment, clean_env: None, monkeypatch: pytest.MonkeyPatch, pki: Pki
) -> None:
    async with TlsProxy(upstream(env), pki, require_client_cert=True) as proxy:
        monkeypatch.setenv("TEMPORAL_ADDRESS", proxy.address)
        monkeypatch.setenv("TEMPORAL_NAMESPACE", env.client.namespace)
        monkeypatch.setenv("TEMPORAL_TLS_SERVER_CA_CERT_PATH", str(pki.ca))
        monkeypatch.setenv("TEMPORAL_TLS_CLIENT_CERT_PATH", str(pki.client_cert))
        monkeypatch.setenv("TEMPORAL_TLS_CLIENT_KEY_PATH", str(pki.client_key))
        monkeypatch.setenv("TEMPORAL_TLS_SERVER_NAME", "localhost")
        client = await connect()
        assert client.service_client.config.target_host == proxy.address
        assert await client.count_workflows() is not None
        assert proxy.connections >= 1


async def test_server_only_tls_from_a_profile_file(
    env: WorkflowEnvironment, clean_env: None, monkeypatch: pytest.MonkeyPatch, pki: Pki
) -> None:
    async with TlsProxy(upstream(env), pki) as proxy:
        profiles = write_profiles(
            pki.ca.parent / "temporal.toml", pki, proxy.address, env.client.namespace
        )
        # The server-only proxy does not ask for the profile's client certificate.
        monkeypatch.setenv("TEMPORAL_CONFIG_FILE", str(profiles))
        monkeypatch.setenv("TEMPORAL_PROFILE", "secure")
        client = await connect()
        assert client.namespace == env.client.namespace
        await client.count_workflows()
        assert proxy.connections >= 1


async def test_a_client_without_a_certificate_is_refused_when_one_is_required(
    env: WorkflowEnvironment, clean_env: None, pki: Pki
) -> None:
    async with TlsProxy(upstream(env), pki, require_client_cert=True) as proxy:
        options = ConnectionOptions(
            address=proxy.address, tls_ca_path=str(pki.ca), tls_server_name="localhost"
        )
        with pytest.raises(RuntimeError):
            client = await connect(options=options)
            await client.count_workflows()


async def test_a_plain_client_cannot_talk_to_the_tls_port(
    env: WorkflowEnvironment, clean_env: None, pki: Pki
) -> None:
    async with TlsProxy(upstream(env), pki) as proxy:
        with pytest.raises(RuntimeError):
            client = await connect(proxy.address)
            await client.count_workflows()


# ------------------------------------------------------------------ the CLI's flags


async def test_cli_flags_connect_through_mtls_and_o_json_is_json(
    env: WorkflowEnvironment,
    cli_env: str,
    clean_env: None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    pki: Pki,
) -> None:
    # The env points nowhere: only the flags can reach the server.
    monkeypatch.setenv("TEMPORAL_ADDRESS", "127.0.0.1:1")
    async with TlsProxy(upstream(env), pki, require_client_cert=True) as proxy:
        flags = [
            "--address",
            proxy.address,
            "--namespace",
            env.client.namespace,
            "--tls-ca-path",
            str(pki.ca),
            "--tls-cert-path",
            str(pki.client_cert),
            "--tls-key-path",
            str(pki.client_key),
            "--tls-server-name",
            "localhost",
        ]
        code, out, err = await cli(capsys, "runs", "--limit", "1", "-o", "json", *flags)
        assert code == 0, err
        assert isinstance(json.loads(out), list)
        assert proxy.connections >= 1

        code, out, err = await cli(capsys, "runs", *flags[:-6], "--tls-server-name", "localhost")
        assert code == 2
        assert "TLS handshake or authentication failed" in err
        assert proxy.address in err


async def test_cli_profile_flag_reads_the_file(
    env: WorkflowEnvironment,
    cli_env: str,
    clean_env: None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    pki: Pki,
) -> None:
    async with TlsProxy(upstream(env), pki, require_client_cert=True) as proxy:
        profiles = write_profiles(
            pki.ca.parent / "temporal.toml", pki, proxy.address, env.client.namespace
        )
        args = ["--config-file", str(profiles), "--profile", "secure", "--json"]
        code, out, err = await cli(capsys, "pending", *args)
        assert code == 0, err
        assert isinstance(json.loads(out), list)
        assert proxy.connections >= 1


async def test_cli_unknown_profile_is_a_one_line_error(
    cli_env: str, clean_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = await cli(capsys, "runs", "--profile", "nope")
    assert code == 2
    assert "Profile 'nope' not found" in err
    assert "Traceback" not in err


async def test_cli_api_key_never_printed(
    cli_env: str, clean_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = await cli(
        capsys, "runs", "--address", "127.0.0.1:1", "--api-key", "sekrit-key-123"
    )
    assert code == 2
    assert "sekrit-key-123" not in out + err
