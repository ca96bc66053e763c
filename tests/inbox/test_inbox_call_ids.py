"""Runs and calls whose ids hold a slash are decided in the inbox like any other (served
by uvicorn).

A code-mode script's host calls are named `<script call>/<n>`, a sub-agent's run id ends
with its call's key, a model names its own calls as it likes, and an operator names runs:
the inbox's links and its API put each id in one path segment (`%2F`), and the server
must route that to the call, not answer 404.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from inbox_support import make_app, make_users, pay_registry, served
from temporalio.client import Client

import cli_support
from cli_support import cli
from durable_tools.client import DurableTools
from durable_tools.workflows import AgentConfig, ApprovalPolicy
from support import answer, calls, running_worker, wait_for, write_script

SLASHED = "s1/1"
RUN_ID = "team/a%2Fb run"
"""A run id with a slash, an escaped slash taken literally, and a space."""

cli_env = cli_support.cli_env  # the fixture, by the name the tests ask for


async def test_a_call_id_with_a_slash_is_shown_and_decided(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    users = make_users(tmp_path)
    async with running_worker(client, pay_registry(), task_queue):
        model = write_script(
            tmp_path, [calls((SLASHED, "pay", {"amount_cents": 5, "memo": "x"})), answer("ok")]
        )
        config = AgentConfig(name="slashed", model=model, approval=ApprovalPolicy())
        tools = DurableTools(client, task_queue)
        run = await tools.start("pay", config=config, run_id=RUN_ID)
        [approval] = (await wait_for(run, lambda s: bool(s.pending_approvals))).pending_approvals
        assert approval.call_id == SLASHED
        async with (
            served(make_app(client, task_queue, users)) as server,
            httpx.AsyncClient(base_url=server.url, timeout=60) as script,
        ):
            alice = {"Authorization": f"Bearer {users.alice}"}
            run_page = f"/runs/{quote(RUN_ID, safe='')}"
            call = f"{run_page}/calls/{quote(SLASHED, safe='')}"
            for _ in range(100):  # visibility is eventually consistent
                listed = await script.get("/", headers=alice)
                if f'href="{call}"' in listed.text:
                    break
                await asyncio.sleep(0.2)
            assert f'href="{call}"' in listed.text, "the pending page links to the call"
            shown = await script.get(run_page, headers=alice)
            assert shown.status_code == 200 and f'href="{call}"' in shown.text
            page = await script.get(call, headers=alice)
            assert page.status_code == 200, page.text[:300]
            assert approval.arguments_hash in page.text
            decided = await script.post(
                f"/api{call}/decide",
                json={"approve": True, "arguments_hash": approval.arguments_hash},
                headers=alice,
            )
            assert decided.status_code == 200, decided.text[:300]
            assert decided.json()["verdict"] == "approved"
        await run.result()


@pytest.mark.parametrize("call_id", ["s1/1", "c1?x#y", "../../c2", "50%"])
async def test_the_cli_decides_such_a_call_through_the_inbox(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    cli_env: str,
    capsys: Any,
    monkeypatch: Any,
    call_id: str,
) -> None:
    # `approve --inbox` put the ids in the URL as they were: a slash, `?` or `#` sent the
    # decision to another path (a 404, or a call of that name).
    users = make_users(tmp_path)
    monkeypatch.setenv("DURABLE_TOOLS_INBOX_TOKEN", users.alice)
    async with running_worker(client, pay_registry(), task_queue):
        model = write_script(
            tmp_path, [calls((call_id, "pay", {"amount_cents": 5, "memo": "x"})), answer("ok")]
        )
        config = AgentConfig(name="slashed", model=model, approval=ApprovalPolicy())
        run = await DurableTools(client, task_queue).start(
            "pay", config=config, run_id=f"{RUN_ID}-{uuid.uuid4().hex[:6]}"
        )
        [approval] = (await wait_for(run, lambda s: bool(s.pending_approvals))).pending_approvals
        async with served(make_app(client, task_queue, users)) as server:
            code, out, err = await cli(
                capsys,
                *("approve", run.run_id, call_id, "--hash", approval.arguments_hash),
                *("--inbox", server.url),
            )
        assert code == 0, err
        assert "approved" in out
        await run.result()
