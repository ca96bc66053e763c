"""The real Temporal Web UI, in a real browser (Debian's chromium driven by Playwright),
shows a tool argument of an encrypted run only through the codec server, and only to a
caller the codec server lets in.

The dev server's UI is started with `--ui-codec-endpoint` pointing at the codec server.
The UI sends a Bearer token only over https (`passAccessToken`), so on this http loopback
setup the test's browser adds the header for the codec server's origin itself, as an
authenticating proxy in front of the UI would; CORS (preflight, credentials) is the
browser's own.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from codec_support import ARGUMENT, codec, vault_model, vault_registry
from temporalio.client import Client

from browser_support import CHROMIUM, CHROMIUM_ARGS, require_browser
from durable_tools import DurableTools, RunStatus
from durable_tools.codec import data_converter
from durable_tools.codec.server import CodecServerConfig, create_codec_app
from durable_tools.inbox import AuthConfig, InboxServer, TokenStore, add_token
from durable_tools.server import DevServer
from support import assert_not_wedged, free_port, running_worker

playwright_api = require_browser()
Browser, Route = playwright_api.Browser, playwright_api.Route


@pytest.mark.slow
async def test_the_temporal_ui_shows_a_decoded_argument_only_through_the_codec_server(
    tmp_path: Path, task_queue: str
) -> None:
    tokens = tmp_path / "tokens.json"
    token = add_token(tokens, "alice")
    port, ui_port = free_port(), free_port()
    ui = f"http://127.0.0.1:{ui_port}"
    config = CodecServerConfig(auth=AuthConfig(TokenStore(tokens)), ui_origins=(ui,))
    codec_server = InboxServer(create_codec_app(codec(), config), port=0)
    await codec_server.start()
    server = DevServer(
        tmp_path / "temporal",
        port=port,
        ui_port=ui_port,
        extra_args=["--ui-codec-endpoint", codec_server.url],
    )
    await server.start()
    try:
        secure = await Client.connect(server.address, data_converter=data_converter(codec()))
        async with running_worker(secure, vault_registry(), task_queue):
            run = await DurableTools(secure, task_queue).start("look", model=vault_model(tmp_path))
            assert (await run.result()).status == RunStatus.COMPLETED
        handle = secure.get_workflow_handle(run.run_id)
        await assert_not_wedged(handle)
        run_id = (await handle.describe()).run_id
        page_url = f"{ui}/namespaces/default/workflows/{run.run_id}/{run_id}/history"
        async with playwright_api.async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                refused = await history_text(browser, page_url, codec_server.url, None)
                allowed = await history_text(browser, page_url, codec_server.url, token)
            finally:
                await browser.close()
    finally:
        await server.stop()
        await codec_server.stop()
    assert "lookup" in refused and ARGUMENT not in refused
    assert ARGUMENT in allowed


async def history_text(browser: Browser, url: str, codec_url: str, token: str | None) -> str:
    """The text of the run's history page once the `lookup` event's details are open."""
    context = await browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        if token is not None:

            async def with_token(route: Route) -> None:
                headers = {**route.request.headers, "authorization": f"Bearer {token}"}
                await route.continue_(headers=headers)

            await context.route(f"{codec_url}/**", with_token)
        page = await context.new_page()
        await page.goto(url)  # the UI long-polls: wait for selectors, never for network idle
        scheduled = (
            page.locator("tr")
            .filter(has_text="Activity Task Scheduled")
            .filter(has_text=re.compile(r"\blookup\b"))
            .filter(has_not_text="durable_tools")
        )
        await scheduled.first.wait_for(timeout=60_000)
        await scheduled.first.click()
        await page.get_by_text("Task Queue Kind").first.wait_for(timeout=30_000)
        if token is None:
            # The UI tried the codec server, was refused, and says so.
            await (
                page.locator("#content")
                .get_by_text("Codec Server could not connect")
                .wait_for(timeout=30_000)
            )
        else:
            await page.get_by_text(ARGUMENT).first.wait_for(timeout=30_000)
        return str(await page.inner_text("body"))
    finally:
        await context.close()
