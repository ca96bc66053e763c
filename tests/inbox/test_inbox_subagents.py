"""The inbox shows a run that waits on its sub-agent's approval (the pending list, the JSON
API, the run's page) and decides it from the parent's page, in a real browser too."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

from inbox_support import csrf_token, http, login, make_app, make_users, served
from temporalio.client import Client

from browser_support import CHROMIUM, CHROMIUM_ARGS, require_browser
from durable_tools import AgentConfig, AgentRun, DurableTools, RunStatus, ToolRegistry
from support import answer, assert_not_wedged, calls, decisions_sent, running_worker, write_script

playwright_api = require_browser()


def delegating_registry(tmp_path: Path) -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(approval=True, idempotent=True, approval_summary="pay {amount_cents} cents")
    def pay(amount_cents: int) -> str:
        """Pay an amount (needs approval)."""
        return f"paid {amount_cents}"

    child = write_script(tmp_path, [calls(("c1", "pay", {"amount_cents": 700})), answer("paid")])
    registry.subagent(AgentConfig(model=child), name="payer", description="Pays.")
    return registry


async def start_parent(client: Client, task_queue: str, tmp_path: Path) -> tuple[AgentRun, str]:
    """A parent run whose sub-agent waits to pay, once visibility shows the parent waiting."""
    agent = f"parent-{uuid.uuid4().hex[:8]}"
    model = write_script(tmp_path, [calls(("s1", "payer", {"task": "pay"})), answer("done")])
    tools = DurableTools(client, task_queue)
    run = await tools.start("delegate", config=AgentConfig(name=agent, model=model))
    for _ in range(200):
        if any(s.run_id == run.run_id for s in await tools.pending()):
            return run, agent
        await asyncio.sleep(0.1)
    raise AssertionError("the parent never showed up as waiting in the search attributes")


async def test_the_parents_page_and_the_api_show_the_childs_wait_and_decide_it(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    users = make_users(tmp_path)
    async with running_worker(client, delegating_registry(tmp_path), task_queue):
        run, agent = await start_parent(client, task_queue, tmp_path)
        child_id = f"{run.run_id}.s1"
        async with http(make_app(client, task_queue, users)) as inbox:
            bearer = {"Authorization": f"Bearer {users.alice}"}
            listed: dict[str, Any] = (
                await inbox.get("/api/pending", params={"agent": agent}, headers=bearer)
            ).json()
            [told] = listed["subagent_waits"]
            assert (told["run_id"], told["agent"]) == (run.run_id, agent)
            assert (told["call_id"], told["tool"]) == ("c1", "pay")
            assert told["summary"] == "pay «700» cents" and told["waiting_run"] == child_id
            assert listed["pending"] == []  # the parent itself waits for nothing of its own
            await login(inbox, users.alice)
            page = (await inbox.get("/", params={"agent": agent})).text
            assert 'id="subagent-waits"' in page and child_id in page
            run_page = (await inbox.get(f"/runs/{run.run_id}")).text
            assert "Waiting on sub-agents" in run_page
            assert f'href="/runs/{run.run_id}/calls/c1"' in run_page
            call_page = await inbox.get(f"/runs/{run.run_id}/calls/c1")
            assert call_page.status_code == 200 and 'id="waiting-run"' in call_page.text
            assert child_id in call_page.text
            form = {
                "csrf_token": csrf_token(call_page.text),
                "action": "approve",
                "arguments_hash": told["arguments_hash"],
            }
            decided = await inbox.post(f"/runs/{run.run_id}/calls/c1/decide", data=form)
            assert decided.status_code == 303, decided.text
            # A call id nobody waits on, through the parent: not found, nothing sent.
            gone = await inbox.get(f"/runs/{run.run_id}/calls/nobody-waits")
            assert gone.status_code == 404
        result = await run.result()
        sent_to_child = await decisions_sent(AgentRun(client, child_id))
        sent_to_parent = await decisions_sent(run)
    assert result.status == RunStatus.COMPLETED
    assert sent_to_parent == [] and len(sent_to_child) == 1
    assert sent_to_child[0]["decider"] == "alice"
    await assert_not_wedged(run.handle, allowed=0)


async def test_a_browser_approves_a_sub_agents_call_from_the_parents_page(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    users = make_users(tmp_path)
    async with running_worker(client, delegating_registry(tmp_path), task_queue):
        run, _ = await start_parent(client, task_queue, tmp_path)
        async with (
            served(make_app(client, task_queue, users)) as server,
            playwright_api.async_playwright() as playwright,
        ):
            browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                page = await browser.new_page()
                await page.goto(f"{server.url}/runs/{run.run_id}")
                await page.fill("#token", users.alice)
                await page.click("#sign-in")
                await page.wait_for_selector("#subagent-waits")
                await page.locator("li.subagent-wait a").first.click()
                await page.wait_for_selector("#waiting-run")
                await page.click("#approve")
                await page.wait_for_selector("#flash")
                assert "approved" in await page.inner_text("#flash")
                assert page.url.endswith(f"/runs/{run.run_id}")
            finally:
                await browser.close()
        result = await run.result()
    assert result.status == RunStatus.COMPLETED
