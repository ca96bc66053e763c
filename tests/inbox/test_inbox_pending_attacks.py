"""Attacks on the pending page's query cache (`RunQueries.answers`), on the real dev server
and the real inbox app: a run whose `status` query hangs, on the same task queue as a
healthy run waiting for a decision, must not hide that run's request; and what the "not
answering" list shows must not be more than the filtered list allows."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from inbox_support import http, login, make_app, make_users, pay_registry, start_pending
from temporalio import workflow
from temporalio.client import Client, WorkflowHandle
from temporalio.service import RPCError

from durable_tools import AgentRun, DurableTools, search_attributes as sa
from durable_tools.inbox._pending import QUERY_TIMEOUT
from support import running_worker

HANG = QUERY_TIMEOUT + 4.0
"""Seconds the hostile run's `status` query takes: past the inbox's query timeout."""
HANG_OVER = threading.Event()
"""Set each time a hanging `status` query returns (the in-process worker runs again)."""


@workflow.defn(name="HangingStatusHost", sandboxed=False)
class HangingStatusHost:
    """A host-like workflow that says it waits for a decision (the search attributes the
    pending list filters on) and whose `status` query handler hangs."""

    def __init__(self) -> None:
        self._done = False

    @workflow.run
    async def run(self, agent: str) -> None:
        workflow.upsert_search_attributes(
            [
                sa.AGENT_NAME.value_set(agent),
                sa.PENDING_APPROVALS.value_set(1),
                sa.AWAITING_TOOL.value_set("secret_tool_of_another_tenant"),
            ]
        )
        await workflow.wait_condition(lambda: self._done)

    @workflow.query
    def status(self) -> dict[str, Any]:
        time.sleep(HANG)  # a hostile (or buggy) handler: blocks its worker's answer
        HANG_OVER.set()
        return {}

    @workflow.update
    def decide(self, _: Any) -> None:
        self._done = True


async def hang_over() -> None:
    """Until the hanging query the page sent has returned, and its answer has landed (a
    page sent meanwhile would share that query still in flight)."""
    assert await asyncio.to_thread(HANG_OVER.wait, HANG * 4), "the hanging query never ended"
    await asyncio.sleep(1.0)


@asynccontextmanager
async def healthy_and_hanging_runs(
    client: Client, task_queue: str, tmp_path: Path, *, hanging_agent: str = "", **start: Any
) -> AsyncIterator[tuple[AgentRun, WorkflowHandle[Any, Any], str]]:
    """A worker, a healthy run waiting for a decision of `pay`, and (newer, so first on
    the page) a hanging run of the same agent (or of `hanging_agent`) on the same task
    queue."""
    # debug_mode: the worker's deadlock detector would otherwise fail the hanging query
    # after 2 s (an answer, not a hang). It runs activations on the event loop, so the
    # whole in-process worker stalls meanwhile: what the tests below break on does not
    # depend on that (the hanging run's query times out; its neighbours are then not
    # asked at all), and in production the same comes from any run whose query takes
    # longer than QUERY_TIMEOUT (a frozen or overloaded worker holding it).
    async with running_worker(
        client, pay_registry(), task_queue, workflows=[HangingStatusHost], debug_mode=True
    ):
        run, _, agent = await start_pending(client, task_queue, tmp_path, **start)
        hanging = await client.start_workflow(
            HangingStatusHost.run,
            hanging_agent or agent,
            id=f"hanging-{uuid.uuid4().hex}",
            task_queue=task_queue,
        )
        query = f"AgentName IN ('{agent}', '{hanging_agent or agent}') AND PendingApprovals > 0"
        for _ in range(300):  # visibility is eventually consistent
            if (await client.count_workflows(query)).count == 2:
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("the hanging run never showed up as pending")
        try:
            yield run, hanging, agent
        finally:
            await hanging.terminate("test over")
            with contextlib.suppress(RPCError):  # a run whose call was decided may be over
                await run.handle.terminate("test over")


@pytest.mark.timeout(300)
async def test_a_hanging_run_does_not_hide_a_healthy_run_of_its_task_queue(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    users = make_users(tmp_path)
    async with healthy_and_hanging_runs(client, task_queue, tmp_path) as (run, hanging, agent):
        app = make_app(client, task_queue, users)
        alice = {"Authorization": f"Bearer {users.alice}"}
        async with http(app) as script:
            # The first load asks the hanging run first (the newest): the healthy run of
            # its task queue may miss this page (its worker looks gone); what the
            # hanging run must not do is hide it on the pages after, once its own query
            # is over.
            HANG_OVER.clear()
            first = (await script.get(f"/api/pending?agent={agent}&all=1", headers=alice)).json()
            assert hanging.id in first["unreachable_runs"]
            await hang_over()
            for load in ("reload", "second reload"):
                found = (
                    await script.get(f"/api/pending?agent={agent}&all=1", headers=alice)
                ).json()
                assert found["unreachable_runs"] == [hanging.id], load
                assert [item["run_id"] for item in found["pending"]] == [run.run_id], load


@pytest.mark.timeout(300)
async def test_the_not_answering_list_keeps_to_the_tool_filter(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    users = make_users(tmp_path)
    async with healthy_and_hanging_runs(client, task_queue, tmp_path) as (_, hanging, agent):
        app = make_app(client, task_queue, users)
        alice = {"Authorization": f"Bearer {users.alice}"}
        async with http(app) as script:
            found = (await script.get(f"/api/pending?agent={agent}&tool=pay", headers=alice)).json()
            # The hanging run waits for another tool (its AwaitingTool): not this page's.
            assert hanging.id not in found["unreachable_runs"]


@pytest.mark.timeout(300)
async def test_a_run_the_user_may_not_decide_is_not_named_through_the_not_answering_list(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    users = make_users(tmp_path)
    async with healthy_and_hanging_runs(client, task_queue, tmp_path, deciders=("group:ops",)) as (
        run,
        _,
        agent,
    ):
        app = make_app(client, task_queue, users)
        bob = {"Authorization": f"Bearer {users.bob}"}  # not in ops
        async with http(app) as script:
            found = (await script.get(f"/api/pending?agent={agent}", headers=bob)).json()
            assert run.run_id not in found["unreachable_runs"]
            assert found["pending"] == []


@pytest.mark.timeout(300)
async def test_a_run_that_does_not_answer_is_named_only_to_who_may_see_it_without_its_answer(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # Who may decide the hanging run's call is in its answer, which never comes: by
    # default (only what you may decide) it is counted in `hidden`, not named, to anyone;
    # `all=1` (every call, decidable or not) names it.
    users = make_users(tmp_path)
    async with healthy_and_hanging_runs(client, task_queue, tmp_path) as (run, hanging, agent):
        app = make_app(client, task_queue, users)
        async with http(app) as script:
            # Once asked, the hanging run is remembered and its stall (see above) is over.
            alice = {"Authorization": f"Bearer {users.alice}"}
            HANG_OVER.clear()
            await script.get(f"/api/pending?agent={agent}&all=1", headers=alice)
            await hang_over()
            for token in (users.alice, users.bob):
                headers = {"Authorization": f"Bearer {token}"}
                found = (await script.get(f"/api/pending?agent={agent}", headers=headers)).json()
                assert found["unreachable_runs"] == []
                assert found["hidden"] == 1  # the hanging run's one call
                assert [item["run_id"] for item in found["pending"]] == [run.run_id]
                everything = (
                    await script.get(f"/api/pending?agent={agent}&all=1", headers=headers)
                ).json()
                assert everything["unreachable_runs"] == [hanging.id]
                assert everything["hidden"] == 0
            await login(script, users.bob)
            rows = await script.get("/pending/rows", params={"agent": agent})
            assert rows.status_code == 200 and hanging.id not in rows.text


async def test_a_decided_call_is_not_shown_pending_beside_a_hanging_run(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # Whatever the hanging neighbour does to the page, a decision is never shown as
    # still waiting: a run that answers is asked again on every page.
    users = make_users(tmp_path)
    async with healthy_and_hanging_runs(client, task_queue, tmp_path) as (run, _, agent):
        app = make_app(client, task_queue, users)
        alice = {"Authorization": f"Bearer {users.alice}"}
        tools = DurableTools(client, task_queue)
        snapshot = await tools.run(run.run_id).status()
        [approval] = snapshot.pending_approvals
        await run.decide(approval.call_id, approve=False, reason="no")
        async with http(app) as script:
            pages = await asyncio.gather(
                *(script.get(f"/api/pending?agent={agent}", headers=alice) for _ in range(4))
            )
            for page in pages:
                assert page.status_code == 200
                assert all(item["run_id"] != run.run_id for item in page.json()["pending"])
