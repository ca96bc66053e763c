"""The pending list under load, on the real dev server: more runs than fit on one page are
paged through (none dropped), a user sees only what they may decide unless they ask, and
concurrent requests share bounded run queries instead of fanning out."""

from __future__ import annotations

import asyncio
import dataclasses
import html
import math
import re
import shlex
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from inbox_support import (
    cancel_and_check,
    http,
    login,
    make_app,
    make_users,
    pay_registry,
    served,
    start_pending,
)
from temporalio.client import Client

from durable_tools import AgentConfig, AgentRun, DurableTools, PendingInput, RunStatus, ToolRegistry
from durable_tools.inbox._pending import NotAnswering, RunQueries, other_waits
from durable_tools.protocol._input_types import InputQuestion
from durable_tools.workflows import RunSnapshot
from support import answer, calls, running_worker, wait_for, write_script

RUNS = 5
PAGE = 2
_NEXT = re.compile(r'<a class="next" href="([^"]+)"')


async def all_pages(script: httpx.AsyncClient, query: str, token: str) -> list[dict[str, Any]]:
    """Every page of `/api/pending?{query}` for the holder of `token`, cursor after cursor."""
    pages: list[dict[str, Any]] = []
    cursor = ""
    while True:
        url = f"/api/pending?{query}" + (f"&cursor={cursor}" if cursor else "")
        answer = await script.get(url, headers={"Authorization": f"Bearer {token}"})
        assert answer.status_code == 200, answer.text
        pages.append(answer.json())
        cursor = pages[-1]["next_cursor"]
        if cursor is None:
            return pages
        assert len(pages) <= RUNS, "the cursor never ran out"


async def start_many(client: Client, task_queue: str, tmp_path: Path, agent: str) -> list[AgentRun]:
    """`RUNS` runs of `agent`, each waiting for a decision that only group ops may make."""
    runs = []
    for _ in range(RUNS):
        run, _, _ = await start_pending(
            client, task_queue, tmp_path, agent=agent, deciders=("group:ops",)
        )
        runs.append(run)
    return runs


async def test_the_pending_list_pages_through_more_runs_than_one_page_holds(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    users = make_users(tmp_path)
    agent = f"paged-{uuid.uuid4().hex[:8]}"
    app = make_app(client, task_queue, users, page_size=PAGE)
    async with running_worker(client, pay_registry(), task_queue):
        runs = await start_many(client, task_queue, tmp_path, agent)
        async with http(app) as script:
            pages = await all_pages(script, f"agent={agent}", users.alice)
            listed = [item["run_id"] for page in pages for item in page["pending"]]
            # Every run once, none dropped, at most a page's worth at a time.
            assert sorted(listed) == sorted(run.run_id for run in runs)
            assert all(len(page["pending"]) <= PAGE for page in pages)
            assert len(pages) == -(-RUNS // PAGE)
            assert all(not page["unreachable_runs"] for page in pages)
            # One run by its id (what `approve --inbox` needs, however long the list).
            only = await script.get(
                f"/api/pending?run={runs[0].run_id}",
                headers={"Authorization": f"Bearer {users.alice}"},
            )
            assert [i["run_id"] for i in only.json()["pending"]] == [runs[0].run_id]
            # A page says when it is cut, and links the next one.
            await login(script, users.alice)
            first = await script.get(f"/?agent={agent}")
            found = _NEXT.search(first.text)
            assert found is not None and "More runs are waiting" in first.text
            second = await script.get(found.group(1).replace("&amp;", "&"))
            assert second.status_code == 200
            shown = {run.run_id for run in runs if f"/runs/{run.run_id}/calls/c1" in second.text}
            assert shown and not any(f"/runs/{r}/calls/c1" in first.text for r in shown)
            # What the list cannot use is a 400 naming it, not an error page.
            alice = {"Authorization": f"Bearer {users.alice}"}
            forged = await script.get("/api/pending?cursor=not-a-cursor!", headers=alice)
            assert forged.status_code == 400 and "cursor" in forged.json()["error"]
            quoted = await script.get("/api/pending?agent=x' OR 'a'='a", headers=alice)
            assert quoted.status_code == 400 and "agent" in quoted.json()["error"]
        for run in runs:
            await cancel_and_check(run)


async def test_a_user_sees_what_they_may_decide_and_concurrent_lists_share_queries(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    users = make_users(tmp_path)
    agent = f"shared-{uuid.uuid4().hex[:8]}"
    app = make_app(client, task_queue, users, page_size=PAGE, query_concurrency=2)
    async with running_worker(client, pay_registry(), task_queue):
        runs = await start_many(client, task_queue, tmp_path, agent)
        async with http(app) as script:
            # bob is not in group ops: nothing is his, and the answer says what it left out.
            bobs = await all_pages(script, f"agent={agent}", users.bob)
            assert all(page["pending"] == [] for page in bobs)
            assert sum(page["hidden"] for page in bobs) == RUNS
            everything = await all_pages(script, f"agent={agent}&all=1", users.bob)
            items = [item for page in everything for item in page["pending"]]
            assert len(items) == RUNS and not any(item["may_decide"] for item in items)
            # Ten lists at once: each answers in full, within the bound on queries.
            bob = {"Authorization": f"Bearer {users.bob}"}
            answers = await asyncio.gather(
                *(script.get(f"/api/pending?agent={agent}&all=1", headers=bob) for _ in range(10))
            )
        assert all(answer.status_code == 200 for answer in answers)
        assert all(answer.json()["unreachable_runs"] == [] for answer in answers)
        assert len({str(answer.json()["pending"]) for answer in answers}) == 1
        # Never more run queries at once than configured, however many lists are asked for.
        assert app.state.run_queries.peak <= 2
        for run in runs:
            await cancel_and_check(run)


def callback_registry() -> ToolRegistry:
    registry = pay_registry()
    registry.callback_tool(
        "get_location",
        description="Where the user's device is.",
        parameters={"type": "object", "properties": {"precise": {"type": "boolean"}}},
        timeout=600,
    )
    return registry


async def test_the_pending_list_shows_every_wait_not_only_approvals(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    users = make_users(tmp_path)
    agent = f"waits-{uuid.uuid4().hex[:8]}"
    app = make_app(client, task_queue, users)
    step = calls(("g1", "get_location", {"precise": True}))
    model = write_script(tmp_path, [step, answer("here")])
    async with running_worker(client, callback_registry(), task_queue):
        waiting = await DurableTools(client, task_queue).start(
            "where am I", model=model, config=AgentConfig(name=agent, model=model)
        )
        await wait_for(waiting, lambda s: bool(s.pending_callbacks))
        approving, _, _ = await start_pending(client, task_queue, tmp_path, agent=agent)
        async with http(app) as script:
            answer_json = await script.get(
                f"/api/pending?agent={agent}", headers={"Authorization": f"Bearer {users.alice}"}
            )
            await login(script, users.alice)
            page = await script.get(f"/?agent={agent}")
        await cancel_and_check(waiting)
        await cancel_and_check(approving)
    body = answer_json.json()
    assert [item["run_id"] for item in body["pending"]] == [approving.run_id]
    [wait] = body["other_waits"]
    assert wait["run_id"] == waiting.run_id and wait["kind"] == "callback"
    assert wait["tool"] == "get_location" and wait["call_id"] == "g1"
    assert wait["resume"].startswith(f"durable-tools callbacks serve {waiting.run_id} --tools")
    # The page lists it under "Other waits", with what answers it.
    assert page.status_code == 200
    assert 'id="other-waits"' in page.text and "get_location" in page.text
    assert f"durable-tools callbacks serve {waiting.run_id}" in page.text


HOSTILE_RUN = "chat-$(reboot);'x'"
"""A run id an app derived from a chat's id: shell syntax, and a quote."""


async def test_the_commands_of_other_waits_pass_hostile_ids_as_one_word(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # The "Other waits" column tells the operator a command to run: pasted into a shell,
    # it must pass the run id as it is, not run what the id holds.
    users = make_users(tmp_path)
    agent = f"waits-{uuid.uuid4().hex[:8]}"
    model = write_script(tmp_path, [calls(("g1", "get_location", {})), answer("here")])
    async with running_worker(client, callback_registry(), task_queue):
        run = await DurableTools(client, task_queue).start(
            "where am I", config=AgentConfig(name=agent, model=model), run_id=HOSTILE_RUN
        )
        await wait_for(run, lambda s: bool(s.pending_callbacks))
        async with (
            served(make_app(client, task_queue, users)) as server,
            httpx.AsyncClient(base_url=server.url) as browser,
        ):
            listed = await browser.get(
                f"/api/pending?agent={agent}", headers={"Authorization": f"Bearer {users.alice}"}
            )
            await login(browser, users.alice)
            page = await browser.get(f"/?agent={agent}")
        await cancel_and_check(run)
    [wait] = listed.json()["other_waits"]
    assert shlex.split(wait["resume"])[:4] == ["durable-tools", "callbacks", "serve", HOSTILE_RUN]
    assert wait["resume"] in html.unescape(page.text)  # escaped in the page, shown as it is


def test_a_question_wait_passes_a_hostile_call_id_as_one_word() -> None:
    # The call id is the model's (a prompt injection steers it), the question the MCP
    # server's: the command shown stays three words and the question is bounded.
    call_id = "q`id`$(touch pwned);x"
    asked = PendingInput(
        call_id=call_id,
        tool="ask__greet",
        questions=[InputQuestion(key="k", message="<script>alert(1)</script>" * 1000)],
        requested_at=datetime.now(UTC),
    )
    snapshot = RunSnapshot(
        status=RunStatus.AWAITING_INPUT, agent="a", turn=1, tool_calls=1, pending_inputs=[asked]
    )
    [wait] = other_waits(HOSTILE_RUN, "agent", snapshot)
    assert shlex.split(wait.resume)[:4] == ["durable-tools", "answer", HOSTILE_RUN, call_id]
    assert len(wait.waiting_for) <= 500


async def test_a_run_that_timed_out_is_not_asked_again_until_its_listing_changes(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with running_worker(client, pay_registry(), task_queue):
        run, _, _ = await start_pending(client, task_queue, tmp_path)
    # Its worker is gone (a moment ago: the server still counts it as polling).
    [listed] = [r async for r in client.list_workflows(f"WorkflowId = '{run.run_id}'")]
    queries = RunQueries(DurableTools(client, task_queue), timeout=2.0)
    [first] = await queries.answers([listed])
    assert isinstance(first, TimeoutError | NotAnswering) and queries.sent == 1
    async with running_worker(client, pay_registry(), task_queue):
        # Its worker is back, but the run did not move: it is not asked again yet.
        [second] = await queries.answers([listed])
        assert isinstance(second, NotAnswering) and queries.sent == 1
        # Once what the server lists of it changes (as its history length does on a
        # server that reports it for running workflows), it is asked again, past the
        # task queue's own pause of one timeout.
        await asyncio.sleep(2.5)
        moved = dataclasses.replace(listed, history_length=listed.history_length + 1)
        [third] = await queries.answers([moved])
        assert queries.sent == 2
        assert not isinstance(third, BaseException), third
        assert [a.call_id for a in third[1].pending_approvals] == ["c1"]
    await run.handle.terminate("test over")


@pytest.mark.parametrize(
    "options",
    [
        {"concurrency": 0},
        {"timeout": 0.0},
        {"timeout": math.inf},
        {"timeout": math.nan},
        {"remember": -1.0},
        {"remember": math.nan},
    ],
)
async def test_run_queries_refuse_bounds_that_are_no_bounds(
    client: Client, task_queue: str, options: dict[str, Any]
) -> None:
    with pytest.raises(ValueError, match=r"concurrency|timeout|remember"):
        RunQueries(DurableTools(client, task_queue), **options)
