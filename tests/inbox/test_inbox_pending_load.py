"""The pending page with hundreds of orphaned runs (their worker stopped) beside a few live
ones, on the real dev server: it answers with the live runs' requests listed and the
orphans marked as not answering, asks one orphan for the whole lot instead of each (and
at most one more on reload), and never shows a decided call as pending."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest
from inbox_support import http, login, make_app, make_users, pay_registry, start_pending
from temporalio.client import Client

from durable_tools import AgentConfig, AgentRun, ApprovalPolicy, DurableTools
from support import answer, calls, running_worker, write_script

ORPHANS = 200
LIVE = 3


async def start_orphans(client: Client, task_queue: str, tmp_path: Path, agent: str) -> list[str]:
    """`ORPHANS` runs of `agent` waiting for a decision on `task_queue`, whose worker is
    stopped once they all wait (in the search attributes)."""
    model = write_script(
        tmp_path, [calls(("c1", "pay", {"amount_cents": 500, "memo": "lunch"})), answer("done")]
    )
    config = AgentConfig(name=agent, model=model, approval=ApprovalPolicy())
    tools = DurableTools(client, task_queue)
    waiting = f"AgentName = '{agent}' AND PendingApprovals > 0"
    async with running_worker(client, pay_registry(), task_queue):
        runs: list[AgentRun] = []
        for first in range(0, ORPHANS, 50):  # in batches: the server and worker share 2 cores
            runs += await asyncio.gather(
                *(tools.start("pay for lunch", config=config) for _ in range(first, first + 50))
            )
        waited, stalled = 0, 0
        while waited < ORPHANS:  # slow on a loaded machine: fail only when it stops moving
            await asyncio.sleep(0.5)
            now = (await client.count_workflows(waiting)).count
            stalled = 0 if now > waited else stalled + 1
            waited = now
            assert stalled < 240, f"only {waited} of {ORPHANS} orphans ever waited"
    return [run.run_id for run in runs]


@pytest.mark.slow  # minutes on a loaded machine: 200 runs started, their worker stopped
@pytest.mark.timeout(900)
async def test_a_page_of_hundreds_of_orphaned_runs_lists_the_live_ones_and_marks_the_rest(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    users = make_users(tmp_path)
    agent = f"orphans-{uuid.uuid4().hex[:8]}"
    app = make_app(client, task_queue, users, page_size=ORPHANS + LIVE)
    queries = app.state.run_queries
    async with running_worker(client, pay_registry(), task_queue):
        # The live runs are the oldest: the orphans come first on the page, newest first.
        live = [(await start_pending(client, task_queue, tmp_path, agent=agent))[0] for _ in "abc"]
        orphans = await start_orphans(client, f"{task_queue}-gone", tmp_path, agent)
        alice = {"Authorization": f"Bearer {users.alice}"}
        async with http(app) as script:
            before = queries.sent
            # `all=1`: who may decide an orphan's call is in its answer, which never comes.
            everything = f"/api/pending?agent={agent}&all=1"
            found = (await script.get(everything, headers=alice)).json()
            # What the user sees: every live run's request, every orphan marked.
            assert sorted(item["run_id"] for item in found["pending"]) == sorted(
                run.run_id for run in live
            )
            assert sorted(found["unreachable_runs"]) == sorted(orphans)
            # One orphan stands for its task queue (none when the server already knows no
            # worker polls it): not one query timeout per orphan.
            assert queries.sent - before <= LIVE + 1
            # Reloading asks the live runs again, and at most one orphan (not the one that
            # timed out: only it is remembered, so a hanging run hides no neighbour).
            before = queries.sent
            again = (await script.get(everything, headers=alice)).json()
            assert sorted(again["unreachable_runs"]) == sorted(orphans)
            assert len(again["pending"]) == LIVE
            assert LIVE <= queries.sent - before <= LIVE + 1
            # By default the orphans are counted, not named.
            mine = (await script.get(f"/api/pending?agent={agent}", headers=alice)).json()
            assert mine["unreachable_runs"] == [] and mine["hidden"] == ORPHANS
            # A decision shows at once: the decided call is no longer listed as pending.
            decided, *rest = live
            url = f"/api/runs/{decided.run_id}/calls/c1/decide"
            item = next(i for i in again["pending"] if i["run_id"] == decided.run_id)
            body = {"approve": False, "arguments_hash": item["arguments_hash"]}
            assert (await script.post(url, json=body, headers=alice)).status_code == 200
            await decided.result()
            after = (await script.get(f"/api/pending?agent={agent}", headers=alice)).json()
            assert sorted(i["run_id"] for i in after["pending"]) == sorted(r.run_id for r in rest)
            # The page a person reads says the orphans wait, and what for.
            await login(script, users.alice)
            page = (await script.get(f"/?agent={agent}&all=1")).text
            assert "Runs that wait but did not answer" in page
            assert all(f"/runs/{run_id}" in page for run_id in orphans)
            assert all(f"/runs/{run.run_id}/calls/c1" in page for run in rest)
        for run in rest:
            await run.handle.terminate("test over")
    for run_id in orphans:
        await client.get_workflow_handle(run_id).terminate("test over")
