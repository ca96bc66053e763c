"""The example chat (examples/agui_chat: plain HTML and @ag-ui/client bundled by esbuild) in
Debian's chromium: the user sends a message, the run asks to pay, the card shows what the
inbox would show, the user approves in it, the payment runs once and the answer appears;
after a reload the page shows the thread again, from the session."""

from __future__ import annotations

import importlib.util
import os
import uuid
from pathlib import Path
from types import ModuleType

import pytest
from agui_support import chat_registry
from temporalio.client import Client

from browser_support import CHROMIUM, CHROMIUM_ARGS, require_browser
from durable_tools import AgentConfig, DurableTools
from durable_tools.agui import AguiConfig
from durable_tools.inbox import AuthConfig, InboxServer, TokenStore, add_token
from support import answer, calls, running_worker, write_script

playwright_api = require_browser()
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "agui_chat"


def chat_example() -> ModuleType:
    """examples/agui_chat/app.py, once `make agui-js` built its page (skipped without it,
    except under CI, which builds it)."""
    if not (EXAMPLE / "dist" / "chat.js").exists():
        if os.environ.get("CI", "").lower() not in ("", "0", "false"):
            pytest.fail("examples/agui_chat/dist/chat.js is missing: run `make agui-js`")
        pytest.skip("the example chat is not built: `make agui-js`")
    spec = importlib.util.spec_from_file_location("agui_chat_app", EXAMPLE / "app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_the_example_chat_streams_and_approves_in_its_card(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    example = chat_example()
    tokens = tmp_path / "tokens.json"
    alice = add_token(tokens, "alice")
    script = [
        calls(("c1", "pay", {"amount_cents": 1250, "card": "4242424242424242"})),
        answer("Paid 12.50 for the team lunch."),
    ]
    config = AguiConfig(
        agent=AgentConfig(model=write_script(tmp_path, script)),
        auth=AuthConfig(TokenStore(tokens)),
        poll_interval=0.1,
    )
    ran: list[str] = []
    app = example.create_chat_app(DurableTools(client, task_queue), config)
    server = InboxServer(app, port=0)
    async with running_worker(client, chat_registry(ran), task_queue):
        await server.start()
        try:
            async with playwright_api.async_playwright() as playwright:
                browser = await playwright.chromium.launch(
                    executable_path=CHROMIUM, args=CHROMIUM_ARGS
                )
                try:
                    page = await browser.new_page()
                    await page.goto(f"{server.url}/")
                    thread = f"chat-{uuid.uuid4().hex[:8]}"
                    await page.evaluate(f"localStorage.setItem('threadId', '{thread}')")
                    await page.reload()
                    await page.fill("#token", alice)
                    await page.fill("#message", "pay for the team lunch")
                    await page.click("#send-button")
                    card = page.locator(".card")
                    await card.locator("button.approve").wait_for(timeout=60_000)
                    shown = await card.inner_text()
                    assert "pay" in shown and "1250" in shown and "[redacted]" in shown
                    assert "4242424242424242" not in await page.content()
                    assert ran == []
                    await card.locator("button.approve").click()
                    answered = page.locator(".assistant", has_text="Paid 12.50")
                    await answered.wait_for(timeout=60_000)
                    assert await page.locator(".tool", has_text="paid 1250").count() == 1
                    assert await page.locator(".error").count() == 0
                    # A reload: the page has nothing, the session has the whole thread.
                    await page.reload()
                    await page.fill("#token", alice)
                    again = page.locator(".assistant", has_text="Paid 12.50")
                    await again.wait_for(timeout=60_000)
                    users = await page.locator(".user").all_inner_texts()
                    assert users == ["pay for the team lunch"]
                finally:
                    await browser.close()
        finally:
            await server.stop()
    assert ran == ["pay 1250"]
