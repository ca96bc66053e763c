"""A real browser (Debian's chromium, driven by Playwright) approves a real pending call
through the inbox served by uvicorn; the history names the signed-in user.
"""

from __future__ import annotations

from pathlib import Path

from inbox_support import pay_registry, pending_call, start_pending
from temporalio.client import Client

from browser_support import CHROMIUM, CHROMIUM_ARGS, require_browser
from durable_tools import DurableTools, RunStatus
from durable_tools.inbox import AuthConfig, InboxConfig, InboxServer, create_app
from support import assert_not_wedged, decisions_sent

playwright_api = require_browser()


async def test_a_browser_approves_a_pending_call(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with pending_call(
        client, task_queue, tmp_path, arguments={"amount_cents": 1250, "memo": "team lunch"}
    ) as (users, run, approval, agent):
        config = InboxConfig(
            auth=AuthConfig(users.store()),
            session_secret="browser-test-secret",
            registry=pay_registry(),
        )
        server = InboxServer(create_app(DurableTools(client, task_queue), config), port=0)
        await server.start()
        try:
            async with playwright_api.async_playwright() as playwright:
                browser = await playwright.chromium.launch(
                    executable_path=CHROMIUM, args=CHROMIUM_ARGS
                )
                try:
                    page = await browser.new_page(viewport={"width": 1200, "height": 560})
                    # Unauthenticated: the inbox sends the browser to the login page.
                    await page.goto(f"{server.url}/?agent={agent}")
                    assert "/login" in page.url
                    await page.fill("#token", users.alice)
                    await page.click("#sign-in")
                    await page.wait_for_selector("table.pending")
                    rows = page.locator("table.pending tbody tr")
                    assert await rows.count() == 1
                    assert "team lunch" in await rows.inner_text()
                    # A second call starts waiting: the open page shows it without a reload.
                    other, _, _ = await start_pending(
                        client, task_queue, tmp_path, agent=agent, deciders=("group:ops",)
                    )
                    await playwright_api.expect(rows).to_have_count(2, timeout=30_000)
                    row = rows.filter(has_text=run.run_id)
                    await row.locator("a.call").click()
                    hash_shown = await page.inner_text("#arguments-hash")
                    assert hash_shown == approval.arguments_hash
                    await page.fill("#reason", "within the lunch budget")
                    await page.click("#approve")
                    await page.wait_for_selector("#flash")
                    assert "approved" in await page.inner_text("#flash")
                finally:
                    await browser.close()
        finally:
            await server.stop()
        await other.cancel("test over")
        result = await run.result()
        assert result.status == RunStatus.COMPLETED
        [sent] = await decisions_sent(run)
        assert sent["decider"] == "alice" and sent["approve"] is True
        assert sent["reason"] == "within the lunch budget"
        assert sent["arguments_hash"] == approval.arguments_hash
        await assert_not_wedged(run.handle)
