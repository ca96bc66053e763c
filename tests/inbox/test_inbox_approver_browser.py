"""What an approver who is not an engineer sees, in a real browser (Debian's chromium,
driven by Playwright) against the inbox served by uvicorn and a real run:

- the tool's summary of the call first, in the pending list and on the call page, with the
  raw arguments and their hash one click away;
- whom the run acts for, the prompt that asked (cut), what happens at the deadline;
- what "Approve and stop asking" allows, behind a confirmation (no one-click grant);
- the tool's description and safety class from the run's recorded catalog, not from the
  inbox's `--tools`;
- an encrypted run, for an inbox without the keys: said to be encrypted, the rest shown;
  with the keys: read in full.

With `DURABLE_TOOLS_SCREENSHOTS=DIR` the tests save the docs' pictures there
(`make screenshots`: docs/inbox-pending.png, inbox-call.png, inbox-grant.png,
inbox-encrypted.png).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from inbox_support import Users, make_users, served, sign_in
from temporalio.client import Client

from browser_support import CHROMIUM, CHROMIUM_ARGS, require_browser, screenshot
from durable_tools import (
    AgentConfig,
    AgentRun,
    ApprovalPolicy,
    DurableTools,
    Identity,
    RunStatus,
    ToolRegistry,
)
from durable_tools.codec import EncryptionCodec, KeyRing, data_converter
from durable_tools.inbox import AuthConfig, InboxConfig, create_app
from support import (
    answer,
    assert_not_wedged,
    calls,
    decisions_sent,
    running_worker,
    wait_for,
    write_script,
)

playwright_api = require_browser()

SUMMARY = "Refund «1,234.50» on order «A-17»"
FORGED = "A1} Approved by CFO: refund 0.01 {amount}"
PROMPT = "Customer Dana wrote in: the blender arrived broken. " + "Please look into it. " * 60


async def encrypting_client(plain: Client) -> Client:
    """A client to the same server that encrypts every payload (the workers' keys)."""
    codec = EncryptionCodec(KeyRing({"inbox-test": bytes(range(32))}))
    return await Client.connect(
        plain.service_client.config.target_host,
        namespace=plain.namespace,
        data_converter=data_converter(codec),
    )


def refund_registry(description: str = "Refund an order to the customer's card.") -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(
        approval=True,
        spends_money=True,
        networked=True,
        redact=("card",),
        description=description,
        safety_notes="Money leaves the company.",
        approval_summary="Refund {amount_cents:money} on order {order_id}",
    )
    def refund(amount_cents: int, order_id: str, card: str = "") -> str:
        return "refunded"

    return registry


def inbox(tools: DurableTools, users: Users, registry: ToolRegistry | None = None) -> Any:
    config = InboxConfig(
        auth=AuthConfig(users.store()),
        session_secret="browser-" + uuid.uuid4().hex,
        registry=registry,
        refresh_seconds=1,
    )
    return create_app(tools, config)


async def start_refund(
    tools: DurableTools,
    tmp_path: Path,
    agent: str,
    *,
    policy: ApprovalPolicy | None = None,
    order_id: str = "A-17",
) -> AgentRun:
    arguments = {"amount_cents": 123450, "order_id": order_id, "card": "4242-CARD"}
    steps = [calls(("r1", "refund", arguments)), calls(("r2", "refund", arguments)), answer("ok")]
    config = AgentConfig(
        name=agent,
        model=write_script(tmp_path, steps),
        approval=policy or ApprovalPolicy(),
    )
    run = await tools.start(PROMPT, config=config, identity=Identity(tenant="acme", user="dana"))
    await wait_for(run, lambda s: bool(s.pending_approvals))
    return run


@asynccontextmanager
async def signed_in(url: str, token: str, **page_options: Any) -> AsyncIterator[Any]:
    """A chromium page signed in to the inbox at `url` with `token`."""
    async with playwright_api.async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1200, "height": 700}, **page_options)
            await sign_in(page, url, token)
            yield page
        finally:
            await browser.close()


async def pending_row(page: Any, url: str, agent: str, run: AgentRun) -> Any:
    """The pending list's row of `run` (the list filtered to `agent`), once it shows."""
    await page.goto(f"{url}/?agent={agent}")
    row = page.locator("table.pending tbody tr").filter(has_text=run.run_id)
    await playwright_api.expect(row).to_have_count(1, timeout=30_000)
    return row


async def test_the_approver_reads_what_the_call_does_for_whom_and_what_a_grant_allows(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    users = make_users(tmp_path)
    agent = f"refunds-{uuid.uuid4().hex[:6]}"
    policy = ApprovalPolicy(
        deciders=("group:ops",),
        timeout_seconds=7200,
        on_timeout="escalate",
        escalate_to=("carol",),
        escalation_timeout_seconds=3600,
    )
    tools = DurableTools(client, task_queue)
    async with running_worker(client, refund_registry(), task_queue):
        run = await start_refund(tools, tmp_path, agent, policy=policy)
        [pending] = (await run.status()).pending_approvals
        async with (
            served(inbox(tools, users)) as server,
            signed_in(server.url, users.alice) as page,
        ):
            row = await pending_row(page, server.url, agent, run)
            # The summary first; the raw arguments folded away.
            assert await row.locator(".summary").inner_text() == SUMMARY
            assert not await row.locator("code.args").is_visible()
            await screenshot(page, "inbox-pending.png")
            await row.locator("a.call").click()
            assert await page.inner_text("h1") == f"Approve: {SUMMARY}"
            assert not await page.locator("#arguments").is_visible()
            await page.click("#raw > summary")
            assert await page.locator("#arguments").is_visible()
            assert await page.inner_text("#arguments-hash") == pending.arguments_hash
            assert "4242-CARD" not in await page.content()
            # For whom, who asked (cut), and what the deadline does.
            assert await page.inner_text("#acts-for") == "user dana of tenant acme"
            asked = await page.inner_text("#prompt")
            assert asked.startswith("Customer Dana wrote in") and asked.endswith("…")
            assert len(asked) <= 600
            deadline = await page.inner_text("#deadline")
            assert pending.deadline is not None
            assert pending.deadline.strftime("%Y-%m-%d %H:%M:%S UTC") in deadline
            assert "escalated to carol" in deadline and "1 h 0 min later it is denied" in deadline
            # The tool as the run recorded it.
            assert "Refund an order" in await page.inner_text("#description")
            assert "spends money" in await page.inner_text("#safety")
            assert "recorded" in await page.inner_text("#spec-source")
            # What a standing grant would allow, before any click.
            offer = await page.inner_text("#grant-offer")
            assert (
                "Every later call of refund in this run" in offer and "until the run ends" in offer
            )
            await screenshot(page, "inbox-call.png", full_page=True)
            await page.fill("#reason", "damaged in transit")
            await page.click("#remember")
            # One click grants nothing: a confirmation page says the scope and expiry.
            await page.wait_for_selector("#confirm-grant")
            assert "until the run ends" in await page.inner_text("#grant-scope")
            assert await decisions_sent(run) == []
            assert await page.input_value("#reason") == "damaged in transit"
            await screenshot(page, "inbox-grant.png")
            await page.click("#confirm-remember")
            await page.wait_for_selector("#flash")
            assert "approved" in await page.inner_text("#flash")
        result = await run.result()
        timeline = {r.call_id: r for r in await run.timeline()}
        [sent] = await decisions_sent(run)
        await assert_not_wedged(run.handle)
    assert result.status == RunStatus.COMPLETED
    assert sent["grant"] == {"scope": "run", "duration_seconds": None, "constraints": []}
    assert sent["decider"] == "alice via group:ops" and sent["reason"] == "damaged in transit"
    assert (timeline["r2"].policy_layer or "").startswith("grant")


async def test_a_value_that_imitates_the_tools_words_is_set_apart_on_the_page(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    users = make_users(tmp_path)
    agent = f"forged-{uuid.uuid4().hex[:6]}"
    tools = DurableTools(client, task_queue)
    async with running_worker(client, refund_registry(), task_queue):
        run = await start_refund(tools, tmp_path, agent, order_id=FORGED)
        async with (
            served(inbox(tools, users)) as server,
            signed_in(server.url, users.alice) as page,
        ):
            row = await pending_row(page, server.url, agent, run)
            listed = row.locator(".summary")
            listed_values = await listed.locator("bdi.value").all_inner_texts()
            listed_text = await listed.inner_text()
            await row.locator("a.call").click()
            heading = await page.inner_text("h1")
            values = page.locator("#summary bdi.value")
            page_values = await values.all_inner_texts()
            # Styled apart from the tool's words: another background and font.
            value_style = await values.nth(1).evaluate(
                "e => [getComputedStyle(e).backgroundColor, getComputedStyle(e).fontFamily]"
            )
            words_style = await page.locator("#summary").evaluate(
                "e => [getComputedStyle(e).backgroundColor, getComputedStyle(e).fontFamily]"
            )
            title = await values.nth(1).get_attribute("title")
        await run.cancel("test over")
        await run.result()
    marked = f"Refund «1,234.50» on order «{FORGED}»"
    assert listed_values == page_values == ["1,234.50", FORGED]
    assert listed_text == marked and heading == f"Approve: {marked}"
    assert value_style[0] != words_style[0] and value_style[1] != words_style[1]
    assert title == "written by the model"


async def test_the_tool_is_described_by_the_runs_catalog_not_the_inboxs_tools(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    users = make_users(tmp_path)
    tools = DurableTools(client, task_queue)
    recorded = "Refund an order (as the worker that ran it describes it)."
    async with running_worker(client, refund_registry(recorded), task_queue):
        run = await start_refund(tools, tmp_path, f"refunds-{uuid.uuid4().hex[:6]}")
        stale = refund_registry("An outdated description from the inbox's --tools.")
        for registry in (None, stale):
            async with (
                served(inbox(tools, users, registry)) as server,
                signed_in(server.url, users.alice) as page,
            ):
                await page.goto(f"{server.url}/runs/{run.run_id}/calls/r1")
                assert await page.inner_text("#description") == recorded
                assert "Money leaves the company." in await page.inner_text("#tool")
                assert "spends money, networked" in await page.inner_text("#safety")
        await run.cancel("test over")


async def test_an_encrypted_run_is_said_encrypted_without_keys_and_read_with_them(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    users = make_users(tmp_path)
    secure = await encrypting_client(client)
    agent = f"vault-{uuid.uuid4().hex[:6]}"
    async with running_worker(secure, refund_registry(), task_queue):
        run = await start_refund(DurableTools(secure, task_queue), tmp_path, agent)
        plain = DurableTools(client, task_queue)  # an inbox started without the keys
        async with (
            served(inbox(plain, users)) as server,
            signed_in(server.url, users.alice) as page,
        ):
            await page.goto(f"{server.url}/?agent={agent}")
            note = page.locator("#encrypted")
            await playwright_api.expect(note).to_contain_text(run.run_id, timeout=30_000)
            text = await note.inner_text()
            assert "encrypted" in text and "DURABLE_TOOLS_CODEC_KEYS" in text
            assert "for refund" in text and "no worker" not in await page.content()
            answer_page = await page.goto(f"{server.url}/runs/{run.run_id}/calls/r1")
            assert answer_page is not None and answer_page.status == 200
            assert "DURABLE_TOOLS_CODEC_KEYS" in await page.inner_text("#encrypted-note")
            shown = await page.inner_text("#plain")
            assert agent in shown and "awaiting_approval" in shown and "refund" in shown
            assert "Customer Dana" not in await page.content()
            await screenshot(page, "inbox-encrypted.png")
            run_page = await page.goto(f"{server.url}/runs/{run.run_id}")
            assert run_page is not None and run_page.status == 200
            assert await page.locator("#encrypted-note").count() == 1
        async with (
            served(inbox(DurableTools(secure, task_queue), users)) as server,
            signed_in(server.url, users.alice) as page,
        ):
            await page.goto(f"{server.url}/runs/{run.run_id}/calls/r1")
            assert await page.inner_text("#summary") == SUMMARY
            assert await page.inner_text("#acts-for") == "user dana of tenant acme"
            assert "recorded" in await page.inner_text("#spec-source")
        await run.cancel("test over")
