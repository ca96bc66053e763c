"""Where a run's Web UI page is, as the CLI prints it (`durable_tools.server._ui` decides)."""

from __future__ import annotations

from durable_tools.client import AgentRun
from durable_tools.server import ui_base_for, ui_url

__all__ = ["run_link"]


def run_link(run: AgentRun) -> str:
    """The run's page in the Web UI, or why there is none (the server runs headless).

    `TEMPORAL_UI_URL` when set; else the UI a live embedded server recorded for the address
    the run is on; else, for a server on loopback, frontend port + 1000; else
    http://127.0.0.1:8233.
    """
    has_ui, base = ui_base_for(run.client.service_client.config.target_host)
    if not has_ui:
        return "none (the server runs headless)"
    return ui_url(run.client.namespace, run.run_id, base=base)
