"""A run's tools page and `/api/runs/{id}/tools` (real dev server, real uvicorn, Debian's
chromium): the catalog the run recorded, each tool with its label, source, safety flags,
limits and the approval rule the run's policy holds for it (a safety rule's `ask` for a
shell tool, nothing for a read-only one); hostile descriptions render as text; a catalog
of a thousand tools pages; callers the run page refuses are refused the same way.
(`DURABLE_TOOLS_SCREENSHOTS=docs`: the page's picture, docs/inbox-tools.png.)"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
from inbox_support import Users, http, make_app, make_users, served
from temporalio.client import Client

from browser_support import CHROMIUM, CHROMIUM_ARGS, require_browser, screenshot
from durable_tools import AgentConfig, AgentRun, ApprovalPolicy, DurableTools, ToolRegistry
from durable_tools.inbox import AuthConfig, InboxConfig, create_app
from durable_tools.workflows import SafetyRule
from support import answer, calls, running_worker, wait_for, write_script

HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
FILLERS = 1_000


def catalog() -> ToolRegistry:
    """A shell tool with a label and a hostile description (as a remote MCP server could
    send), a plain read-only lookup, and `FILLERS` more tools."""
    registry = ToolRegistry()

    @registry.tool(
        label="Run a command",
        description="Run a shell command. " + HOSTILE,
        shell=True,
        filesystem=True,
        workspace_root="/srv/ws",
        side_effect="irreversible",
        tags=("ops",),
        safety_notes="Never run rm. " + HOSTILE,
        source="mcp:" + HOSTILE,
        max_concurrent=2,
        rate_limit=5,
        start_to_close_timeout=30,
    )
    def run_command(command: str) -> str:
        return f"ran {command}"

    @registry.tool(read_only=True)
    def lookup(key: str) -> str:
        """Look a key up."""
        return key

    for number in range(FILLERS):

        def filler(x: int = 0) -> int:
            return x

        registry.tool(name=f"filler_{number:04d}", description=f"Filler {number}.")(filler)
    return registry


@asynccontextmanager
async def waiting_run(
    client: Client, task_queue: str, tmp_path: Path
) -> AsyncIterator[tuple[Users, Any, AgentRun]]:
    """A run of `catalog()` under a policy that asks for shell tools, waiting for approval
    of its `run_command` call; the inbox served for it; the users."""
    registry = catalog()
    users = make_users(tmp_path)
    model = write_script(tmp_path, [calls(("c1", "run_command", {"command": "ls"})), answer("ok")])
    policy = ApprovalPolicy(safety_rules=(SafetyRule(shell=True),))
    config = AgentConfig(name=f"agent-{uuid.uuid4().hex[:8]}", model=model, approval=policy)
    tools = DurableTools(client, task_queue)
    inbox = InboxConfig(
        auth=AuthConfig(users.store()), session_secret="test-secret-" + uuid.uuid4().hex
    )
    async with running_worker(client, registry, task_queue):
        run = await tools.start("list the workspace", config=config)
        await wait_for(run, lambda s: bool(s.pending_approvals))
        async with served(create_app(tools, inbox)) as server:
            try:
                yield users, server, run
            finally:
                await run.cancel("test over")


async def test_the_api_gives_each_tool_with_its_safety_limits_and_rule_in_force(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with (
        waiting_run(client, task_queue, tmp_path) as (users, server, run),
        httpx.AsyncClient(base_url=server.url) as api,
    ):
        bearer = {"authorization": f"Bearer {users.bob}"}
        first = await api.get(f"/api/runs/{run.run_id}/tools", headers=bearer)
        assert first.status_code == 200, first.text
        body = first.json()
        assert body["recorded"] is True and body["total"] == FILLERS + 2
        assert body["limit"] == 100 and body["next_offset"] == 100
        assert "ask tools that run shell commands" in body["policy"]
        # The whole catalog pages through, each tool once, within the page bound.
        listed: list[dict[str, Any]] = []
        offset: int | None = 0
        while offset is not None:
            page = await api.get(
                f"/api/runs/{run.run_id}/tools?offset={offset}&limit=500", headers=bearer
            )
            assert page.status_code == 200
            assert len(page.json()["tools"]) <= 500
            listed += page.json()["tools"]
            offset = page.json()["next_offset"]
        found = {tool["name"]: tool for tool in listed}
        assert len(listed) == len(found) == FILLERS + 2
        shell, plain = found["run_command"], found["lookup"]
        assert shell["label"] == "Run a command" and shell["kind"] == "python"
        assert shell["source"] == "mcp:" + HOSTILE  # metadata; the transport says python
        assert shell["description"].endswith(HOSTILE)  # the JSON gives it as it is
        assert shell["safety"]["shell"] is True and shell["safety"]["workspace_root"] == "/srv/ws"
        assert shell["safety"]["side_effect"] == "irreversible" and shell["tags"] == ["ops"]
        assert shell["limits"]["max_concurrent"] == 2 and shell["limits"]["rate_limit"] == 5
        assert shell["limits"]["start_to_close_timeout"] == 30
        assert shell["limits"]["retry"]["maximum_attempts"] == 5
        rule = shell["approval_in_force"]
        assert rule["action"] == "ask" and rule["words"] == "asks for approval"
        assert rule["layer"] == "person" and "runs shell commands" in rule["why"]
        assert "safety rule 1 (ask)" in rule["why"]
        assert shell["own_approval"] == "never"  # the policy asks, not the tool
        assert plain["label"] is None and plain["kind"] == "python"
        assert plain["safety"]["read_only"] is True
        assert plain["approval_in_force"]["action"] == "allow"
        assert plain["approval_in_force"]["words"] == "allowed without approval"


async def test_callers_the_run_page_refuses_are_refused_alike(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with (
        waiting_run(client, task_queue, tmp_path) as (users, server, run),
        httpx.AsyncClient(base_url=server.url) as anonymous,
    ):
        for headers in ({}, {"authorization": "Bearer not-a-token"}):
            pages = [
                await anonymous.get(path, headers=headers)
                for path in (f"/runs/{run.run_id}", f"/runs/{run.run_id}/tools")
            ]
            # Pages send a browser to sign in, back to the page it asked for.
            assert [p.status_code for p in pages] == [303, 303]
            assert [p.headers["location"].split("?")[0] for p in pages] == ["/login"] * 2
            apis = [
                await anonymous.get(path, headers=headers)
                for path in ("/api/pending", f"/api/runs/{run.run_id}/tools")
            ]
            assert [a.status_code for a in apis] == [401, 401]
            assert apis[0].json() == apis[1].json()
            assert "run_command" not in pages[1].text + apis[1].text
        bearer = {"authorization": f"Bearer {users.alice}"}
        missing = "no-such-run-" + uuid.uuid4().hex
        run_page = await anonymous.get(f"/runs/{missing}", headers=bearer)
        tools_page = await anonymous.get(f"/runs/{missing}/tools", headers=bearer)
        assert run_page.status_code == tools_page.status_code == 404
        api = await anonymous.get(f"/api/runs/{missing}/tools", headers=bearer)
        assert api.status_code == 404 and "could not be read" in api.json()["error"]
        # Hostile paging is read as the default, never as an error or an unbounded page.
        for query in ("offset=-1&limit=99999999", "limit=%D9%A1%D9%A0", "offset=1e9&limit=0"):
            paged = await anonymous.get(f"/api/runs/{run.run_id}/tools?{query}", headers=bearer)
            assert paged.status_code == 200
            assert 1 <= len(paged.json()["tools"]) <= 500


playwright_api = require_browser()


async def test_the_page_shows_label_flags_and_rule_and_keeps_hostile_text_inert(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with (
        waiting_run(client, task_queue, tmp_path) as (users, server, run),
        playwright_api.async_playwright() as playwright,
    ):
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1200, "height": 800})
            await page.goto(f"{server.url}/login?next=/runs/{run.run_id}")
            await page.fill("#token", users.alice)
            await page.click("#sign-in")
            await page.click("#tools-link")
            await page.wait_for_selector("table#tools")
            assert f"{FILLERS + 2} tools; showing 1 to 100" in await page.inner_text("#count")
            # The two tools sort after the fillers: the last page holds them.
            while await page.locator("#next").count():
                await page.click("#next")
            row = page.locator("tr.tool", has=page.locator("code.name", has_text="run_command"))
            assert await row.locator(".label").inner_text() == "Run a command"
            safety = await row.locator(".safety").inner_text()
            assert "runs shell commands" in safety and "workspace /srv/ws" in safety
            assert "irreversible side effects" in safety
            assert "asks for approval" in await row.locator(".approval").inner_text()
            assert "at most 2 at once" in await row.locator(".limits").inner_text()
            assert HOSTILE in await row.locator(".description").inner_text()
            assert HOSTILE in await row.locator(".notes").inner_text()
            assert HOSTILE in await row.locator(".source").inner_text()
            assert await page.locator("table#tools script, table#tools img").count() == 0
            assert await page.evaluate("window.__pwned") is None
            lookup = page.locator("tr.tool", has=page.locator("code.name", has_text="lookup"))
            assert "allowed without approval" in await lookup.locator(".approval").inner_text()
            assert "read-only" in await lookup.locator(".safety").inner_text()
            await screenshot(page, "inbox-tools.png", full_page=True)  # docs/inbox.md
        finally:
            await browser.close()


async def test_the_inboxs_own_registry_is_listed_under_the_default_policy(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    users = make_users(tmp_path)
    bearer = {"authorization": f"Bearer {users.bob}"}
    async with http(make_app(client, task_queue, users)) as inbox:
        assert (await inbox.get("/api/tools")).status_code == 401
        assert (await inbox.get("/tools")).status_code == 303  # to the login page
        body = (await inbox.get("/api/tools", headers=bearer)).json()
        assert body["recorded"] is True and body["run_id"] is None
        [pay] = body["tools"]
        assert pay["name"] == "pay" and pay["own_approval"] == "always"
        assert pay["approval_in_force"]["words"] == "asks for approval"
        page = await inbox.get("/tools", headers=bearer)
        assert "asks for approval" in page.text and "cannot ask a worker" in page.text
    no_registry = create_app(
        DurableTools(client, task_queue), InboxConfig(auth=AuthConfig(users.store()))
    )
    async with http(no_registry) as inbox:
        body = (await inbox.get("/api/tools", headers=bearer)).json()
        assert body["recorded"] is False and body["tools"] == []
        assert "started without" in (await inbox.get("/tools", headers=bearer)).text
