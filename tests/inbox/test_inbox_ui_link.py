"""The run page's "open in the Temporal UI" link goes to the UI the embedded server on the
run's address recorded (its `--ui-port`), not to a fixed 8233."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from inbox_support import cancel_and_check, http, login, make_app, pending_call
from temporalio.client import Client

from durable_tools.server._process import process_cmdline
from durable_tools.server._ui import forget_ui, record_ui


async def test_the_run_page_links_to_the_ui_the_server_recorded(
    client: Client, task_queue: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DURABLE_TOOLS_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TEMPORAL_UI_URL", raising=False)
    address = client.service_client.config.target_host
    # What a live embedded server with `--ui-port 9417` records for this address (this
    # process stands in for it: the record is trusted while its pid runs that command line).
    me = process_cmdline(os.getpid())
    assert me is not None
    record_ui(address, "http://127.0.0.1:9417", os.getpid(), me)
    try:
        async with pending_call(client, task_queue, tmp_path) as (users, run, _, _):
            async with http(make_app(client, task_queue, users)) as browser:
                await login(browser, users.alice)
                page = (await browser.get(f"/runs/{run.run_id}")).text
                link = f'href="http://127.0.0.1:9417/namespaces/{client.namespace}/workflows/'
                assert link + run.run_id in page  # before: http://127.0.0.1:8233/...
                # `--ui-url` (or TEMPORAL_UI_URL) still wins.
                app = make_app(client, task_queue, users, ui_base="https://ui.example")
                async with http(app) as other:
                    await login(other, users.alice)
                    page = (await other.get(f"/runs/{run.run_id}")).text
                    assert 'href="https://ui.example/namespaces/' in page
            await cancel_and_check(run)
    finally:
        forget_ui(address, os.getpid())
