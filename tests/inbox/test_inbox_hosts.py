"""The inbox lists and decides the calls of hosts that are not agent runs: a plain workflow
with a `ToolRuntime`, and a Pydantic AI `TemporalAgent` whose tools are durable-tools'
(their handlers under a prefix the inbox finds itself), through its JSON API and in a
real browser; the tool runs once."""

from __future__ import annotations

import asyncio
import json
import shlex
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from host_workflows import IdleWorkflow, PaymentPipeline
    from pydantic_host import PayerWorkflow, payer

    from framework_support import pay_registry, pydantic_ai_client
from inbox_support import http, make_app, make_users, served
from pydantic_ai.durable_exec.temporal import AgentPlugin
from temporalio.client import Client

from browser_support import CHROMIUM, CHROMIUM_ARGS, require_browser
from durable_tools import PendingInput, RunStatus
from durable_tools.inbox._pending import other_waits
from durable_tools.protocol._input_types import InputQuestion
from durable_tools.workflows import PendingAuthorization, RunSnapshot
from support import assert_not_wedged, running_worker

playwright_api = require_browser()


async def _listed(inbox: httpx.AsyncClient, host_id: str, bearer: dict[str, str]) -> Any:
    """The host's entry in `/api/pending`, once visibility shows it waiting."""
    for _ in range(300):
        answer = await inbox.get("/api/pending", params={"run": host_id}, headers=bearer)
        assert answer.status_code == 200, answer.text
        found = [p for p in answer.json()["pending"] if p["run_id"] == host_id]
        if found:
            return found
        await asyncio.sleep(0.2)
    raise AssertionError(f"{host_id} never showed in the inbox's pending list")


async def test_the_api_lists_and_decides_a_plain_workflows_call(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    ran: list[str] = []
    users = make_users(tmp_path)
    app = make_app(client, task_queue, users)
    bearer = {"Authorization": f"Bearer {users.alice}"}
    handle = await client.start_workflow(
        PaymentPipeline.run, "A1", id=f"payments-{task_queue}", task_queue=task_queue
    )
    async with (
        running_worker(client, pay_registry(ran), task_queue, workflows=[PaymentPipeline]),
        http(app) as inbox,
    ):
        [item] = await _listed(inbox, handle.id, bearer)
        assert (item["tool"], item["call_id"], item["arguments"]) == (
            "pay",
            "pay",
            {"order_id": "A1"},
        )
        digest = item["arguments_hash"]
        call_url = f"/runs/{handle.id}/calls/pay"
        page = await inbox.get(call_url, headers=bearer)
        assert page.status_code == 200 and digest in page.text
        assert (await inbox.get(f"/runs/{handle.id}", headers=bearer)).status_code == 200
        # Bound to the arguments shown: another hash, or a forged one, decides nothing.
        for wrong in ("0" * 64, digest[:12], digest + "0", "\uff46" * 64):
            refused = await inbox.post(
                f"/api{call_url}/decide",
                json={"approve": True, "arguments_hash": wrong},
                headers=bearer,
            )
            assert refused.status_code in (400, 409), (wrong, refused.text)
        assert ran == []
        decided = await inbox.post(
            f"/api{call_url}/decide",
            json={"approve": True, "arguments_hash": digest, "reason": "ok"},
            headers=bearer,
        )
        assert decided.status_code == 200, decided.text
        assert decided.json()["verdict"] == "approved"
        # Decided once: the same decision again finds nothing waiting.
        again = await inbox.post(
            f"/api{call_url}/decide",
            json={"approve": True, "arguments_hash": digest},
            headers=bearer,
        )
        assert again.status_code in (404, 409), again.text
        assert await handle.result() == "completed: paid A1"
    assert ran == ["A1"]
    await assert_not_wedged(handle)


async def test_a_workflow_without_a_runtime_decides_nothing(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    """The inbox finds no handlers on a workflow of another kind: its pages and the API
    answer "nothing here", and nothing reaches the workflow."""
    users = make_users(tmp_path)
    app = make_app(client, task_queue, users)
    bearer = {"Authorization": f"Bearer {users.alice}"}
    handle = await client.start_workflow(
        IdleWorkflow.run, id=f"idle-{task_queue}", task_queue=task_queue
    )
    async with (
        running_worker(client, pay_registry([]), task_queue, workflows=[IdleWorkflow]),
        http(app) as inbox,
    ):
        page = await inbox.get(f"/runs/{handle.id}/calls/pay", headers=bearer)
        assert page.status_code in (404, 503), page.text
        for call in ("pay", "x" * 5000, "../decide", "\u202epay"):
            refused = await inbox.post(
                f"/api/runs/{handle.id}/calls/{quote(call, safe='')}/decide",
                json={"approve": True, "arguments_hash": "0" * 64},
                headers=bearer,
            )
            # A call id too long is the request's fault; else the run "did not say what is
            # pending" (it has no such handler): refused, never a server error.
            assert refused.status_code in (400, 409), refused.text
        history = await handle.fetch_history()
        assert not [
            e
            for e in history.events
            if e.HasField("workflow_execution_update_accepted_event_attributes")
        ]
        await handle.terminate("test over")


async def test_a_browser_approves_a_pydantic_ai_agents_call(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    ran: list[str] = []
    client = pydantic_ai_client(client)
    users = make_users(tmp_path)
    handle = await client.start_workflow(
        PayerWorkflow.run, "pay A1", id=f"payer-{task_queue}", task_queue=task_queue
    )
    worker = running_worker(
        client,
        pay_registry(ran),
        task_queue,
        workflows=[PayerWorkflow],
        plugins=[AgentPlugin(payer)],
    )
    app = make_app(client, task_queue, users)
    async with worker, served(app) as server, http(app) as inbox:
        [item] = await _listed(inbox, handle.id, {"Authorization": f"Bearer {users.alice}"})
        async with playwright_api.async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                page = await browser.new_page(viewport={"width": 1200, "height": 600})
                await page.goto(f"{server.url}/?run={handle.id}")
                await page.fill("#token", users.alice)
                await page.click("#sign-in")
                await page.wait_for_selector("table.pending")
                row = page.locator("table.pending tbody tr").filter(has_text=handle.id)
                await playwright_api.expect(row).to_have_count(1, timeout=30_000)
                assert "pay" in await row.inner_text()
                await row.locator("a.call").click()
                assert await page.inner_text("#arguments-hash") == item["arguments_hash"]
                shown = json.loads(await page.inner_text("#arguments"))
                assert shown == {"order_id": "A1"}
                assert ran == []
                await page.fill("#reason", "a damaged parcel")
                await page.click("#approve")
                await page.wait_for_selector("#flash")
                assert "approved" in await page.inner_text("#flash")
            finally:
                await browser.close()
        output = await handle.result()
    assert output == "I read: paid A1"
    assert ran == ["A1"]
    await assert_not_wedged(handle)


def test_a_hosts_other_waits_name_its_prefix() -> None:
    """The commands the inbox shows for a host's other waits reach its runtime."""
    now = datetime.now(UTC)
    snapshot = RunSnapshot(
        status=RunStatus.AWAITING_INPUT,
        agent="a",
        turn=0,
        tool_calls=2,
        pending_inputs=[
            PendingInput(
                call_id="q1",
                tool="ask",
                questions=[InputQuestion(key="k", message="which?")],
                requested_at=now,
            )
        ],
        pending_authorizations=[
            PendingAuthorization(
                call_id="a1",
                tool="read_calendar",
                provider="fake",
                authorization_url="http://127.0.0.1/authorize",
                requested_at=now,
            )
        ],
    )
    question, grant = other_waits("host 1", None, snapshot, "tools_")
    assert shlex.split(question.resume)[:3] == ["durable-tools", "answer", "host 1"]
    assert shlex.split(question.resume)[-2:] == ["--prefix", "tools_"]
    # `auth reissue` cannot reach a host: the inbox's own button renews the link.
    assert "auth reissue" not in grant.resume and "New link" in grant.resume
    [agent_grant] = other_waits("run", None, snapshot.model_copy(update={"pending_inputs": []}))
    assert "durable-tools auth reissue run a1" in agent_grant.resume
