"""Where a server's Web UI is: what the embedded server records, and the links built from it.

An embedded dev server (`durable-tools server`, `make demo`, `ensure_server()`) writes
`servers/<host>_<port>.json` under the project home (`DURABLE_TOOLS_HOME`) while it runs,
naming its UI base URL (`--ui-port` included, None when headless). Everything that prints a
link to a run (the CLI, `AgentRun.ui_url`, the inbox, the demo) knows the frontend address
it talks to, not the data directory, so the record is found by that address. It names the
server's pid and command line: a record whose server is gone is ignored.

`TEMPORAL_UI_URL` overrides it all (a UI behind a proxy, a remote cluster's UI).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

from durable_tools.connection import resolve_address
from durable_tools.server._locate import DEFAULT_UI_URL, check_codec_endpoint, default_data_dir
from durable_tools.server._process import process_cmdline

__all__ = ["UI_URL_ENV", "forget_ui", "record_ui", "recorded_ui", "ui_base_for", "ui_url"]

UI_URL_ENV = "TEMPORAL_UI_URL"
"""Set it to the UI's base URL to override what the server recorded."""

_LOCAL_HOSTS = ("127.0.0.1", "localhost")


def _state_file(address: str) -> Path:
    host, _, port = address.rpartition(":")
    host = "127.0.0.1" if host == "localhost" else host
    name = f"{host}_{port}".replace("/", "_").replace(":", "_")
    return default_data_dir() / "servers" / f"{name}.json"


def record_ui(address: str, ui_base: str | None, pid: int, cmdline: Sequence[str]) -> Path:
    """Record the UI base URL (None when headless) of the server at `address`.

    Args:
        address: The server's frontend host:port.
        ui_base: Its Web UI's base URL, None when headless.
        pid: The server's process, so a record it left behind is recognised as stale.
        cmdline: That process's command line (a reused pid is not mistaken for it).
    """
    path = _state_file(address)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"address": address, "ui_base": ui_base, "pid": pid, "cmdline": list(cmdline)}
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(record))
    temporary.replace(path)
    return path


def forget_ui(address: str, pid: int) -> None:
    """Remove the record of a server that stopped (only if it is that server's)."""
    path = _state_file(address)
    with contextlib.suppress(OSError, ValueError, AttributeError):
        if json.loads(path.read_text()).get("pid") != pid:
            return  # another server took the address since
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def recorded_ui(address: str) -> tuple[bool, str | None]:
    """(found, UI base URL) recorded for the server at `address` by a live embedded server."""
    try:
        state = json.loads(_state_file(address).read_text())
        pid, cmdline = state["pid"], state["cmdline"]
    except (OSError, ValueError, KeyError, TypeError):
        return False, None
    if not isinstance(pid, int) or process_cmdline(pid) != cmdline:
        return False, None
    base = state.get("ui_base")
    if base is None:
        return True, None  # headless
    try:  # it becomes an href in the inbox: an http(s) URL with a host, or nothing
        return True, check_codec_endpoint(base) if isinstance(base, str) else None
    except ValueError:
        return False, None


def ui_base_for(address: str | None = None) -> tuple[bool, str]:
    """(has a UI, the UI's base URL) for the server at `address`.

    `TEMPORAL_UI_URL` when set; else what a live embedded server recorded for the address;
    else, for a server on loopback, the embedded default (frontend port + 1000); else
    http://127.0.0.1:8233. A recorded headless server has no UI: (False, the guess).

    Args:
        address: The frontend's host:port; default `TEMPORAL_ADDRESS` or 127.0.0.1:7233.
    """
    explicit = os.environ.get(UI_URL_ENV)
    if explicit:
        return True, explicit.rstrip("/")
    address = resolve_address(address)
    host, _, port = address.rpartition(":")
    guess = DEFAULT_UI_URL
    if host in _LOCAL_HOSTS and port.isdigit() and int(port) + 1000 <= 65535:
        guess = f"http://{host}:{int(port) + 1000}"
    found, base = recorded_ui(address)
    if found:
        return (False, guess) if base is None else (True, base.rstrip("/"))
    return True, guess


def ui_url(
    namespace: str, workflow_id: str, *, base: str | None = None, address: str | None = None
) -> str:
    """Link to a workflow in the Temporal Web UI.

    Args:
        namespace: The run's namespace.
        workflow_id: The run's workflow id (escaped in the URL).
        base: The UI's base URL; default `ui_base_for(address)`.
        address: The frontend the run is on, to find its UI when `base` is not given.
    """
    root = (base or ui_base_for(address)[1]).rstrip("/")
    return f"{root}/namespaces/{quote(namespace, safe='')}/workflows/{quote(workflow_id, safe='')}"
