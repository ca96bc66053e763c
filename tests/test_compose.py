"""The compose stack without a Docker engine: the file against the Compose Specification's
JSON schema, and what its users rely on (commands the CLI accepts, loopback ports, no
literal secrets, Prometheus scraping the workers, the UI finding the codec server).

`tests/data/compose-spec.json` is the official schema, vendored unchanged from
https://github.com/compose-spec/compose-spec/blob/a08f8d51631b7127ddac3d2c65537db429d0f1d0/schema/compose-spec.json
(Apache-2.0; the last commit touching it in the snapshot at 170098ba07d9). No well-kept PyPI
package ships the current schema.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shlex
import stat
import subprocess
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import pytest
import yaml
from temporalio.api.common.v1 import Payload

from durable_tools.cli import build_parser
from durable_tools.codec import KEY_FILE_ENV, EncryptionCodec, key_provider_from_env
from durable_tools.inbox import session_secret

ROOT = Path(__file__).resolve().parent.parent
COMPOSE_FILE = ROOT / "docker-compose.yml"
SCHEMA_FILE = Path(__file__).resolve().parent / "data" / "compose-spec.json"
MAKE_SECRETS = ROOT / "deploy" / "make-secrets.sh"

# `${NAME}`, `${NAME:-default}`, `${NAME-default}`, `${NAME:?error}`, `${NAME?error}`.
_VARIABLE = re.compile(r"\$\{(?P<name>\w+)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}")
# Environment names whose values are secrets.
_SECRET_NAME = re.compile(r"PASSWORD|PWD|SECRET|TOKEN|API_KEY|_KEYS?$", re.IGNORECASE)
# A long base64 run: what a key or a generated password looks like.
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{24,}={0,2}")


def _secret_looking(text: str) -> list[str]:
    """Long base64 runs mixing digits, upper and lower case (paths and words do not)."""
    return [
        run
        for run in _BASE64_RUN.findall(text)
        if re.search(r"\d", run) and re.search("[A-Z]", run) and re.search("[a-z]", run)
    ]


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    document = yaml.safe_load(COMPOSE_FILE.read_text())
    assert isinstance(document, dict)
    return document


def _defaults(text: str) -> str:
    """Interpolate as Compose does with an empty environment: each variable's default."""

    def replace(match: re.Match[str]) -> str:
        if match["op"] not in (":-", "-"):
            raise AssertionError(f"{match[0]} has no default: the stack needs it set")
        return match["arg"]

    return _VARIABLE.sub(replace, text)


def _argv(service: dict[str, Any]) -> list[str]:
    command = service["command"]
    if isinstance(command, str):
        return shlex.split(_defaults(command))
    return [_defaults(str(part)) for part in command]


def _app_services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The services running the image the Dockerfile builds."""
    return {name: s for name, s in compose["services"].items() if "build" in s}


def _parse(service: dict[str, Any]) -> argparse.Namespace:
    argv = _argv(service)
    assert argv[0] == "durable-tools", argv
    try:
        args = build_parser().parse_args(argv[1:])
    except SystemExit as error:  # argparse reports the bad flag on stderr
        raise AssertionError(f"the CLI rejects {argv}") from error
    assert callable(getattr(args, "handler", None)), argv
    return args


def _command(compose: dict[str, Any], subcommand: str) -> tuple[str, argparse.Namespace]:
    found = [
        (name, _parse(service))
        for name, service in _app_services(compose).items()
        if _argv(service)[1] == subcommand
    ]
    assert len(found) == 1, f"expected one service running `durable-tools {subcommand}`"
    return found[0]


def _environment(service: dict[str, Any]) -> dict[str, str | None]:
    env = service.get("environment", {})
    if isinstance(env, list):
        pairs = [item.split("=", 1) for item in env]
        return {pair[0]: (pair[1] if len(pair) > 1 else None) for pair in pairs}
    return {key: None if value is None else str(value) for key, value in env.items()}


def _published(service: dict[str, Any]) -> dict[int, tuple[str, int]]:
    """container port -> (host address, host port), from the short syntax."""
    published = {}
    for entry in service.get("ports", []):
        assert isinstance(entry, str), f"use the short syntax HOST_IP:HOST:CONTAINER: {entry}"
        parts = entry.split(":")
        # "HOST:CONTAINER" and "CONTAINER" publish on every interface.
        host_ip = parts[0] if len(parts) == 3 else "0.0.0.0"
        host_port = int(parts[-2]) if len(parts) > 1 else 0
        published[int(parts[-1])] = (host_ip, host_port)
    return published


def _secret_path(compose: dict[str, Any], service: dict[str, Any], path: str) -> str:
    """The top-level secret mounted at `path` in `service` (its name), else fail."""
    assert path.startswith("/run/secrets/"), path
    name = path.removeprefix("/run/secrets/")
    assert name in service.get("secrets", []), f"{name} is not mounted"
    assert name in compose["secrets"], name
    return name


def test_compose_file_matches_the_compose_specification(compose: dict[str, Any]) -> None:
    schema = json.loads(SCHEMA_FILE.read_text())
    validator = jsonschema.Draft7Validator(schema)
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(compose)]
    assert errors == []


def test_the_schema_rejects_a_broken_compose_file(compose: dict[str, Any]) -> None:
    """The vendored schema is strict enough to catch a typo (it is not `{}`)."""
    schema = json.loads(SCHEMA_FILE.read_text())
    broken = json.loads(json.dumps(compose))
    broken["services"]["worker"]["restrat"] = "always"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft7Validator(schema).validate(broken)


def test_every_app_service_runs_a_command_the_cli_accepts(compose: dict[str, Any]) -> None:
    services = _app_services(compose)
    assert {"worker", "inbox", "codec-server"} <= set(services)
    images = {service["image"] for service in services.values()}
    assert len(images) == 1, "one image, built once, for every durable-tools service"
    for service in services.values():
        _parse(service)


def test_host_ports_are_bound_to_loopback(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        for host_ip, _ in _published(service).values():
            assert host_ip == "127.0.0.1", name


def test_no_literal_secret_values(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        for key, value in _environment(service).items():
            if value is None or not _SECRET_NAME.search(key):
                continue
            if value.startswith("/run/secrets/"):
                continue
            # Only a reference to the caller's environment, without a fallback value.
            variable = _VARIABLE.fullmatch(value)
            assert variable and variable["op"] in (None, ":?", "?"), f"{name}: {key}"
    assert _secret_looking(COMPOSE_FILE.read_text()) == []
    example = '{"keys": {"k1": "Klpcxzb5XcAdV3vUY9MZuBlDg9nsN1vFdMgWhx2fVlg="}}'
    assert _secret_looking(example) != []  # the check would see a pasted key
    for name, secret in compose["secrets"].items():
        assert Path(secret["file"]).parent == Path("deploy/secrets"), name
    ignored = (ROOT / "deploy" / "secrets" / ".gitignore").read_text().splitlines()
    assert "*" in ignored
    assert "deploy/secrets/" in (ROOT / ".dockerignore").read_text().splitlines()


def test_app_services_read_the_codec_keys_from_a_secret(compose: dict[str, Any]) -> None:
    """Workers, inbox and codec server must share keys, or runs cannot be read."""
    names = set()
    for service in _app_services(compose).values():
        path = _environment(service)[KEY_FILE_ENV]
        assert path is not None
        names.add(_secret_path(compose, service, path))
    assert len(names) == 1


def test_prometheus_scrapes_every_worker_metrics_port(compose: dict[str, Any]) -> None:
    worker_name, worker = _command(compose, "worker")
    assert worker.metrics_port is not None
    assert worker.metrics_host == "0.0.0.0", "loopback inside the container: unreachable"
    mounts = dict(volume.split(":")[:2] for volume in compose["services"]["prometheus"]["volumes"])
    config_file = next(
        source for source, target in mounts.items() if target == "/etc/prometheus/prometheus.yml"
    )
    config = yaml.safe_load((ROOT / config_file).read_text())
    targets = [
        (name, discovery["port"])
        for job in config["scrape_configs"]
        for discovery in job.get("dns_sd_configs", [])
        for name in discovery["names"]
    ]
    assert targets == [(worker_name, worker.metrics_port)]


def test_the_ui_calls_the_codec_server(compose: dict[str, Any]) -> None:
    ui = compose["services"]["temporal-ui"]
    endpoint = urlsplit(str(_environment(ui)["TEMPORAL_CODEC_ENDPOINT"]))
    name, codec = _command(compose, "codec-server")
    # The browser calls it: a host address, published by the codec server's container.
    assert (endpoint.hostname, endpoint.port) == _published(compose["services"][name])[codec.port]
    assert codec.host == "0.0.0.0"
    ui_ip, ui_port = _published(ui)[8080]
    assert f"http://{ui_ip}:{ui_port}" in codec.ui_origin
    # The browser's credentials are the inbox's login cookie: the same secret and users.
    _, inbox = _command(compose, "serve")
    assert codec.session_secret_file == inbox.session_secret_file
    assert codec.tokens_file == inbox.tokens_file
    assert _environment(ui)["TEMPORAL_CODEC_INCLUDE_CREDENTIALS"] == "true"
    assert inbox.ui_url == f"http://{ui_ip}:{ui_port}"


def test_the_dockerfile_installs_the_extras_the_services_need() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    match = re.search(r'pip install --constraint constraints.txt "\.\[([\w,]+)\]"', dockerfile)
    assert match, "the image installs durable-tools with its extras, pinned"
    extras = set(match[1].split(","))
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert extras <= set(pyproject["project"]["optional-dependencies"])
    assert "inbox" in extras  # `serve` and `codec-server`


def test_make_secrets_makes_what_the_stack_reads(compose: dict[str, Any], tmp_path: Path) -> None:
    """The script makes every file the compose file names, in the formats read."""
    target = tmp_path / "secrets"
    subprocess.run(["sh", str(MAKE_SECRETS), str(target)], check=True, capture_output=True)
    made = {path.name: path.read_bytes() for path in target.iterdir()}
    referenced = {Path(secret["file"]).name for secret in compose["secrets"].values()}
    for service in compose["services"].values():
        for entry in service.get("env_file", []):
            if isinstance(entry, str):
                referenced.add(Path(entry).name)
    assert referenced == set(made)
    assert stat.S_IMODE(target.stat().st_mode) == 0o700

    keys = key_provider_from_env({KEY_FILE_ENV: str(target / "codec-keys.json")})
    assert keys is not None
    codec = EncryptionCodec(keys)
    payload = Payload(metadata={"encoding": b"json/plain"}, data=b'"hello"')
    encoded = asyncio.run(codec.encode([payload]))
    assert encoded[0].data != payload.data
    assert asyncio.run(codec.decode(encoded)) == [payload]
    assert len(session_secret(str(target / "inbox-session-secret"))) >= 40
    env = dict(line.split("=", 1) for line in (target / "postgres.env").read_text().split())
    assert env["POSTGRES_PASSWORD"] == env["POSTGRES_PWD"] != ""

    # Re-running keeps every secret: a new codec key would strand encrypted histories.
    subprocess.run(["sh", str(MAKE_SECRETS), str(target)], check=True, capture_output=True)
    assert {path.name: path.read_bytes() for path in target.iterdir()} == made
