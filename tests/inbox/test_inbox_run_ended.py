"""A run that a tool ended (`ToolError(ends_run=True)`), as the inbox shows it in a real
browser: failed, the call that ended it, and why."""

from __future__ import annotations

from pathlib import Path

from inbox_support import make_users, pay_registry
from temporalio.client import Client

from browser_support import CHROMIUM, CHROMIUM_ARGS, require_browser
from durable_tools import DurableTools, RunStatus, ToolExecutionError, ToolRegistry
from durable_tools.inbox import AuthConfig, InboxConfig, InboxServer, create_app
from support import answer, calls, running_worker, write_script

playwright_api = require_browser()


def ledger() -> ToolRegistry:
    tools = ToolRegistry()

    @tools.tool(idempotent=True)
    def settle(account: str) -> str:
        """Settle an account."""
        raise ToolExecutionError(f"the ledger of {account} is corrupted", ends_run=True)

    return tools


async def test_the_run_page_shows_the_tool_that_ended_the_run(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    users = make_users(tmp_path)
    model = write_script(tmp_path, [calls(("c1", "settle", {"account": "A-9"})), answer("no")])
    async with running_worker(client, ledger(), task_queue):
        run = await DurableTools(client, task_queue).start("settle", model=model)
        assert (await run.result()).status == RunStatus.FAILED
        config = InboxConfig(
            auth=AuthConfig(users.store()), session_secret="ended-secret", registry=pay_registry()
        )
        server = InboxServer(create_app(DurableTools(client, task_queue), config), port=0)
        await server.start()
        try:
            async with playwright_api.async_playwright() as playwright:
                browser = await playwright.chromium.launch(
                    executable_path=CHROMIUM, args=CHROMIUM_ARGS
                )
                try:
                    page = await browser.new_page()
                    await page.goto(f"{server.url}/runs/{run.run_id}")
                    await page.fill("#token", users.alice)
                    await page.click("#sign-in")
                    await page.wait_for_selector("#status")
                    assert await page.inner_text("#status") == "failed"
                    events = await page.inner_text("ul >> nth=-1")
                finally:
                    await browser.close()
        finally:
            await server.stop()
    assert "tool.ended_run settle the ledger of A-9 is corrupted" in events
    assert "run.failed tool call c1 (settle) ended the run: the ledger of A-9" in events
