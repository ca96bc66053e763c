"""`requires_confirmation` end to end (real dev server, real uvicorn): a tool that declares
only that asks a person before it runs, and the CLI and the inbox say why."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import confirm_tools
import httpx
from inbox_support import login, make_users, served
from temporalio.client import Client

import cli_support
from cli_support import cli, cli_json
from durable_tools import DurableTools, RunStatus
from durable_tools.inbox import AuthConfig, InboxConfig, create_app
from support import answer, calls, running_worker, wait_for, write_script

cli_env = cli_support.cli_env  # the fixture, by the name the tests ask for


async def test_a_tool_that_requires_confirmation_waits_for_a_person(
    client: Client, task_queue: str, tmp_path: Path, cli_env: str, capsys: Any
) -> None:
    confirm_tools.dropped.clear()
    model = write_script(tmp_path, [calls(("c1", "drop_table", {"table": "users"})), answer("ok")])
    users = make_users(tmp_path)
    tools = DurableTools(client, task_queue)
    config = InboxConfig(
        auth=AuthConfig(users.store()),
        session_secret="test-secret-" + uuid.uuid4().hex,
        registry=confirm_tools.registry,
    )
    async with running_worker(client, confirm_tools.registry, task_queue):
        run = await tools.start("drop the users table", model=model)
        snapshot = await wait_for(run, lambda s: bool(s.pending_approvals))
        assert confirm_tools.dropped == []  # nothing ran before a person said so
        assert snapshot.status == RunStatus.AWAITING_APPROVAL
        assert snapshot.pending_approvals[0].tool == "drop_table"

        # The CLI: `tools` says why it asks; `pending` lists the call.
        listed = await cli_json(capsys, "tools", "--tools", "confirm_tools")
        assert listed[0]["approval"] == "always"
        assert listed[0]["safety"]["requires_confirmation"] is True
        assert listed[0]["catalog"]["safety_notes"] == "Data is gone for good."
        code, text, _ = await cli(capsys, "tools", "--tools", "confirm_tools")
        assert code == 0 and "requires confirmation, approval: always" in text
        assert "safety notes: Data is gone for good." in text
        for _ in range(200):  # `pending` reads the search attributes: eventually consistent
            code, text, _ = await cli(capsys, "pending")
            if run.run_id in text:
                break
            await asyncio.sleep(0.1)
        assert code == 0 and "drop_table" in text and f"approve {run.run_id} c1" in text

        # The inbox's page of the call says why it waits.
        async with (
            served(create_app(tools, config)) as server,
            httpx.AsyncClient(base_url=server.url) as browser,
        ):
            await login(browser, users.alice)
            page = await browser.get(f"/runs/{run.run_id}/calls/c1")
        assert page.status_code == 200
        assert "requires confirmation; approval: always" in page.text
        assert "Safety notes: Data is gone for good." in page.text

        await run.approve("c1", decider="alice")
        result = await asyncio.wait_for(run.result(), 30)
    assert result.status == RunStatus.COMPLETED and confirm_tools.dropped == ["users"]
