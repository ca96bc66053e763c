"""A tool's display label on the surfaces people read (real dev server, real uvicorn): the
inbox's pending list and call page, and `durable-tools pending`, beside the tool's name."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import httpx
from inbox_support import login, make_users, served
from temporalio.client import Client

import cli_support
from cli_support import cli
from durable_tools import DurableTools, ToolRegistry
from durable_tools.inbox import AuthConfig, InboxConfig, create_app
from support import answer, calls, running_worker, wait_for, write_script

cli_env = cli_support.cli_env  # the fixture, by the name the tests ask for


def labelled() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(approval=True, idempotent=True, label="Refund an order")
    def refund_order(order_id: str) -> str:
        """Refund an order."""
        return f"refunded {order_id}"

    return registry


async def test_people_read_the_label_and_machines_the_name(
    client: Client, task_queue: str, tmp_path: Path, cli_env: str, capsys: Any
) -> None:
    registry = labelled()
    model = write_script(
        tmp_path, [calls(("r1", "refund_order", {"order_id": "A-1"})), answer("ok")]
    )
    users = make_users(tmp_path)
    tools = DurableTools(client, task_queue)
    config = InboxConfig(
        auth=AuthConfig(users.store()),
        session_secret="test-secret-" + uuid.uuid4().hex,
        registry=registry,
    )
    async with running_worker(client, registry, task_queue):
        run = await tools.start("refund A-1", model=model)
        await wait_for(run, lambda s: bool(s.pending_approvals))
        async with (
            served(create_app(tools, config)) as server,
            httpx.AsyncClient(base_url=server.url) as browser,
        ):
            await login(browser, users.alice)
            page = await browser.get(f"/runs/{run.run_id}/calls/r1")
            rows = ""
            # The list reads search attributes (eventually consistent); narrowed to this run,
            # as the dev server is shared and a listed run with no worker answers slowly.
            for _ in range(200):
                rows = (await browser.get("/pending/rows", params={"run": run.run_id})).text
                if run.run_id in rows:
                    break
                await asyncio.sleep(0.1)
        assert page.status_code == 200
        assert "Approve Refund an order (<code>refund_order</code>)?" in page.text
        assert "<title>Refund an order" in page.text
        assert "Refund an order <code>refund_order</code>" in rows
        code, text, _ = await cli(capsys, "show", run.run_id)
        assert code == 0, text
        assert "approval needed: Refund an order (refund_order)" in text
        assert f"approve {run.run_id} r1" in text  # commands name the call, as always
        await run.approve("r1", decider="alice")
        await asyncio.wait_for(run.result(), 30)
