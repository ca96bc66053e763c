"""Where a run's Web UI page is: the UI address the `server` command records.

`durable-tools server` writes `servers/<host>_<port>.json` under the project home
(`DURABLE_TOOLS_HOME`) while it runs, naming its UI base URL (`--ui-port` included). The
commands that print a link read it back for the address they talk to, so the link follows
the server's real UI port instead of guessing `port + 1000`.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from durable_tools.client import AgentRun
from durable_tools.connection import resolve_address
from durable_tools.server import default_data_dir, ui_url

__all__ = ["UI_URL_ENV", "forget_ui", "record_ui", "recorded_ui", "run_link"]

UI_URL_ENV = "TEMPORAL_UI_URL"
"""Set it to the UI's base URL to override what the server recorded."""


def _state_file(address: str) -> Path:
    host, _, port = address.rpartition(":")
    host = "127.0.0.1" if host == "localhost" else host
    name = f"{host}_{port}".replace("/", "_").replace(":", "_")
    return default_data_dir() / "servers" / f"{name}.json"


def record_ui(address: str, ui_base: str | None, pid: int | None) -> Path:
    """Record the UI base URL (None when headless) of the server at `address`."""
    path = _state_file(address)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps({"address": address, "ui_base": ui_base, "pid": pid}))
    temporary.replace(path)
    return path


def forget_ui(address: str) -> None:
    """Remove the record of a server that stopped."""
    with contextlib.suppress(FileNotFoundError):
        _state_file(address).unlink()


def _alive(pid: object) -> bool:
    if not isinstance(pid, int):
        return True  # nothing to check against: trust the record
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def recorded_ui(address: str) -> tuple[bool, str | None]:
    """(found, UI base URL) recorded for the server at `address` by a live `server`."""
    try:
        state = json.loads(_state_file(address).read_text())
    except (OSError, ValueError):
        return False, None
    if not isinstance(state, dict) or not _alive(state.get("pid")):
        return False, None
    base = state.get("ui_base")
    return True, base if isinstance(base, str) else None


def run_link(run: AgentRun) -> str:
    """The run's page in the Web UI.

    `TEMPORAL_UI_URL` when set; else the UI the `server` command recorded for this
    address; else, for a server on loopback, the embedded default (frontend port + 1000);
    else http://127.0.0.1:8233. A headless server has no UI: the link says so.
    """
    if os.environ.get(UI_URL_ENV):
        return run.ui_url
    address = resolve_address()
    found, base = recorded_ui(address)
    if found:
        if base is None:
            return "none (the server runs headless)"
        return ui_url(run.client.namespace, run.run_id, base=base)
    host, _, port = address.rpartition(":")
    if host in ("127.0.0.1", "localhost") and port.isdigit():
        return ui_url(run.client.namespace, run.run_id, base=f"http://{host}:{int(port) + 1000}")
    return run.ui_url
