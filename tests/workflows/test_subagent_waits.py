"""A parent run shows that it waits while its sub-agent waits for a person: its search
attributes, details and status say on which child, for what, and how to decide it; the
notices the child sends are checked like any input from outside."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import Client, WorkflowQueryFailedError

from durable_tools import (
    AgentConfig,
    AgentRun,
    DurableTools,
    ExecutionStrategy,
    Limits,
    RunStatus,
    ToolRegistry,
    search_attributes as sa,
)
from durable_tools.client.runs._decide import NothingPending
from durable_tools.protocol._wait_types import MAX_SUBAGENT_WAITS
from support import (
    answer,
    assert_not_wedged,
    assert_replays,
    calls,
    delegating_model,
    notice_token,
    researcher_registry,
    running_worker,
    subagent_notice,
    subagent_wait,
    wait_for,
    write_script,
)

SIGNAL = "subagent_waits"


async def attributes(run: AgentRun) -> tuple[str | None, int | None, str | None, str]:
    found = (await run.handle.describe()).typed_search_attributes
    try:
        metadata = await run.handle.query(
            "__temporal_workflow_metadata", result_type=WorkflowMetadata
        )
        details = metadata.current_details
    except WorkflowQueryFailedError:  # ended, and its worker is gone
        details = ""
    return (
        found.get(sa.AGENT_STATUS),
        found.get(sa.PENDING_APPROVALS),
        found.get(sa.AWAITING_TOOL),
        details,
    )


async def shown(
    run: AgentRun, status: str, count: int
) -> tuple[str | None, int | None, str | None, str]:
    for _ in range(200):
        seen = await attributes(run)
        if seen[:2] == (status, count):
            return seen
        await asyncio.sleep(0.1)
    raise AssertionError(f"{run.run_id} never showed {status} / {count}: {seen}")


async def test_the_parent_says_it_waits_on_its_child_and_is_decided_by_its_own_id(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    executed: list[str] = []
    registry = researcher_registry(tmp_path, executed)
    parent_model = delegating_model(tmp_path)
    async with running_worker(client, registry, task_queue):
        dt = DurableTools(client, task_queue)
        run = await dt.start("delegate", model=parent_model, run_id=f"parent-{task_queue}")
        child_id = f"{run.run_id}.r1"
        snapshot = await wait_for(run, lambda s: bool(s.subagent_approvals))
        [wait] = snapshot.subagent_approvals
        assert (wait.run_id, wait.call_id, wait.tool) == (child_id, "pub", "publish")
        assert wait.summary == "publish «findings»" and wait.display_tool == "Publish"
        assert snapshot.status == RunStatus.AWAITING_APPROVAL
        *_, tool, details = await shown(run, "awaiting_approval", 1)
        assert tool == "publish"
        assert f"sub-agent run `{child_id}` waits for approval of `publish` (call `pub`)" in details
        assert f"durable-tools approve {run.run_id} pub --hash {wait.arguments_hash}" in details
        # A call id nobody waits on, through the parent: refused, saying what waits.
        try:
            await run.decide_request("unknown", False, arguments_hash=None, decider="alice")
        except NothingPending as refused:
            assert refused.pending == ("pub",)
        else:
            raise AssertionError("an unknown call id was decided")
        # The decision names the parent: it reaches the child that waits.
        recorded = await run.decide_request(
            "pub", True, arguments_hash=wait.arguments_hash, decider="alice"
        )
        assert recorded.run_id == child_id
        result = await run.result()
        final = await attributes(run)
        events = await run.events()
        history = await run.handle.fetch_history()
        child_history = await AgentRun(client, child_id).handle.fetch_history()
    assert result.status == RunStatus.COMPLETED and executed == ["findings"]
    assert final[:3] == ("completed", 0, "")
    waiting = [e.detail for e in events if e.event == "subagent.waiting"]
    assert waiting and "publish (call pub)" in (waiting[0] or "")
    await assert_replays(history)
    await assert_replays(child_history)


async def test_forged_huge_future_and_replayed_notices_change_nothing(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    executed: list[str] = []
    registry = researcher_registry(tmp_path, executed)
    parent_model = delegating_model(tmp_path)
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("delegate", model=parent_model)
        child_id = f"{run.run_id}.r1"
        snapshot = await wait_for(run, lambda s: bool(s.subagent_approvals))
        [real] = snapshot.subagent_approvals
        now = datetime.now(UTC)
        forged = subagent_wait(
            child_id, "forged", "a" * 64, tool="wire_money", requested_at=now.isoformat()
        )

        def notice(*waits: dict[str, Any], **changed: Any) -> dict[str, Any]:
            sent = {"sent_at": now.isoformat(), **changed}
            return subagent_notice(child_id, *(waits or [forged]), **sent)

        hostile: list[Any] = [
            notice(child_id="someone-else"),  # not a sub-agent of this run
            notice(child_id=f"{run.run_id}.r2"),  # no such call
            notice({**forged, "run_id": "other-run"}),  # not its own
            notice(sent_at=(now + timedelta(days=365)).isoformat()),  # from the future
            notice(sent_at="2026-01-01T00:00:00"),  # no time zone
            notice(*[forged] * 5_000),  # too many
            notice({**forged, "summary": "x" * 1_500_000}),  # huge
            notice({**forged, "arguments_hash": "zz"}),  # not a hash
            notice(seq=-1),
            notice(extra="field"),
            "a string",
            12,
            None,
            [1, 2, 3],
        ]
        for payload in hostile:
            await run.handle.signal(SIGNAL, payload)
        # The child's own first notice sent again (its token, its seq 0): dropped without
        # a word.
        replayed = notice(seq=0, token=await notice_token(client, child_id))
        await run.handle.signal(SIGNAL, replayed)
        refusals: list[str] = []
        for _ in range(200):
            refusals = [
                e.detail or "" for e in await run.events() if e.event == "subagent.notice_refused"
            ]
            if len(refusals) >= len(hostile):
                break
            await asyncio.sleep(0.1)
        assert len(refusals) == len(hostile), refusals
        assert "no sub-agent call of this run runs 'someone-else'" in refusals[0]
        assert "names run 'other-run'" in refusals[2]
        assert "not yet sent" in refusals[3]
        after = await run.status()
        assert after.subagent_approvals == [real]  # the child's own word stands
        assert (await attributes(run))[1] == 1
        await run.approve("pub", decider="alice")
        result = await run.result()
        await assert_not_wedged(run.handle, allowed=0)
    assert result.status == RunStatus.COMPLETED and executed == ["findings"]


async def test_a_parent_that_continues_as_new_shows_only_the_child_that_waits_now(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # The parent passes its event limit while its first child waits: it continues as new
    # only once that call has ended (between turns), and its next run hears the next
    # child (notices go to the parent's workflow id), not the first one.
    executed: list[str] = []
    registry = researcher_registry(tmp_path, executed)
    parent_model = write_script(
        tmp_path,
        [
            calls(("r1", "researcher", {"task": "first"})),
            calls(("r2", "researcher", {"task": "second"})),
            answer("both done"),
        ],
    )
    config = AgentConfig(model=parent_model, continue_as_new_after_events=20)
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("delegate twice", config=config)
        first, second = f"{run.run_id}.r1", f"{run.run_id}.r2"
        waiting = await wait_for(run, lambda s: bool(s.subagent_approvals))
        assert [w.run_id for w in waiting.subagent_approvals] == [first]
        assert waiting.continued == 0
        await run.approve("pub", decider="alice")  # through the parent
        waiting = await wait_for(
            run, lambda s: [w.run_id for w in s.subagent_approvals] == [second], timeout=30
        )
        assert waiting.continued >= 1 and waiting.status == RunStatus.AWAITING_APPROVAL
        *_, details = await shown(run, "awaiting_approval", 1)
        assert second in details and first not in details
        # The first child's old notice, sent again to the new run: not a running call.
        shown_wait = waiting.subagent_approvals[0].model_dump(mode="json")
        stale = subagent_notice(first, {**shown_wait, "run_id": first}, seq=99)
        await run.handle.signal(SIGNAL, stale)
        for _ in range(200):
            refused = [e for e in await run.events() if e.event == "subagent.notice_refused"]
            if refused:
                break
            await asyncio.sleep(0.1)
        assert refused and first in (refused[0].detail or "")
        assert [w.run_id for w in (await run.status()).subagent_approvals] == [second]
        await run.approve("pub", decider="alice")
        result = await run.result()
        final = await attributes(run)
        await assert_not_wedged(run.handle, allowed=0)
    assert result.status == RunStatus.COMPLETED and executed == ["findings", "findings"]
    assert final[:3] == ("completed", 0, "")


async def test_a_grandchilds_wait_reaches_the_root_and_is_decided_by_the_roots_id(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    executed: list[str] = []
    registry = researcher_registry(tmp_path, executed)
    lead_model = write_script(
        tmp_path, [calls(("r1", "researcher", {"task": "dig"})), answer("lead done")]
    )
    registry.subagent(
        AgentConfig(name="lead", model=lead_model), name="lead", description="Leads research."
    )
    root_model = write_script(tmp_path, [calls(("l1", "lead", {"task": "run it"})), answer("ok")])
    config = AgentConfig(model=root_model, max_subagent_depth=2)
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("delegate deep", config=config)
        lead = f"{run.run_id}.l1"
        snapshot = await wait_for(run, lambda s: bool(s.subagent_approvals))
        [wait] = snapshot.subagent_approvals
        assert wait.run_id.startswith(lead + ".") and wait.call_id == "pub"
        grandchild = wait.run_id
        *_, details = await shown(run, "awaiting_approval", 1)
        assert f"sub-agent run `{grandchild}`" in details
        assert f"durable-tools approve {run.run_id} pub" in details
        recorded = await run.decide_request(
            "pub", True, arguments_hash=wait.arguments_hash, decider="alice"
        )
        assert recorded.run_id == grandchild
        result = await run.result()
    assert result.status == RunStatus.COMPLETED and executed == ["findings"]


async def test_a_child_waiting_on_more_calls_than_a_notice_lists_is_counted_in_full(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # 25 approvals at once in one child, and four children waiting together: the notices
    # list at most MAX_SUBAGENT_WAITS each and count the rest, and the parent's
    # PendingApprovals counts every one.
    registry = ToolRegistry()

    @registry.tool(approval=True, idempotent=True)
    def publish(text: str) -> str:
        """Publish a text (needs approval)."""
        return "published"

    many = [(f"p{i}", "publish", {"text": str(i)}) for i in range(25)]
    child_model = write_script(tmp_path, [calls(*many), answer("never")])
    registry.subagent(
        AgentConfig(
            name="bulk",
            model=child_model,
            strategy=ExecutionStrategy(mode="parallel", concurrency=25),
            limits=Limits(max_tool_calls_per_turn=25),
        ),
        name="bulk",
        description="Publishes a lot.",
    )
    parent_model = write_script(
        tmp_path,
        [calls(*[(f"b{i}", "bulk", {"task": "go"}) for i in range(4)]), answer("never")],
    )
    config = AgentConfig(model=parent_model, strategy=ExecutionStrategy(mode="parallel"))
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("fan out", config=config)
        snapshot = await wait_for(
            run, lambda s: len(s.subagent_approvals) == 4 * MAX_SUBAGENT_WAITS, timeout=60
        )
        assert {w.run_id for w in snapshot.subagent_approvals} == {
            f"{run.run_id}.b{i}" for i in range(4)
        }
        *_, details = await shown(run, "awaiting_approval", 100)
        assert details.count("waits for approval of `publish`") == 4 * MAX_SUBAGENT_WAITS
        await run.cancel("test over")
        result = await run.result()
        await assert_not_wedged(run.handle, allowed=0)
    assert result.status == RunStatus.CANCELLED


async def test_a_flood_of_notices_keeps_the_run_bounded_and_its_childs_word(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # 400 notices at once: forged ones (refused, in the events the run keeps) and stale
    # copies of the child's (dropped): the run's state stays bounded, its task never
    # fails, and it still shows exactly what the child waits for.
    executed: list[str] = []
    registry = researcher_registry(tmp_path, executed)
    config = AgentConfig(model=delegating_model(tmp_path), events_kept=50)
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("delegate", config=config)
        child_id = f"{run.run_id}.r1"
        snapshot = await wait_for(run, lambda s: bool(s.subagent_approvals))
        [real] = snapshot.subagent_approvals
        old = (real.requested_at - timedelta(hours=1)).isoformat()
        wait = {**real.model_dump(mode="json"), "call_id": "fake"}
        flood = [
            subagent_notice(f"{run.run_id}.x{i}" if i % 2 else child_id, wait, seq=i, sent_at=old)
            for i in range(400)
        ]
        # In batches of 50: more signals buffered during one workflow task than the
        # server's batch limit (100) make it fail the task once to flush them.
        for start in range(0, len(flood), 50):
            batch = flood[start : start + 50]
            await asyncio.gather(*(run.handle.signal(SIGNAL, notice) for notice in batch))
        for _ in range(300):
            events = await run.events(subagents=False)
            if sum(e.event == "subagent.notice_refused" for e in events) >= 50 - 5:
                break
            await asyncio.sleep(0.1)
        assert len(events) <= 50
        assert (await run.status()).subagent_approvals == [real]
        await run.approve("pub", decider="alice")
        result = await run.result()
        await assert_not_wedged(run.handle, allowed=0)
    assert result.status == RunStatus.COMPLETED and executed == ["findings"]


async def test_a_sub_agent_that_continues_as_new_keeps_its_depth_and_its_parent(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    """A sub-agent's next run in its chain is as deep as it was (it may not start a
    sub-agent of its own past the root's depth limit) and keeps telling its parent what it
    waits for, counting its notices on: before, the continued run started at depth 0 with
    no parent to tell."""
    executed: list[str] = []
    registry = ToolRegistry()

    @registry.tool(approval=True, idempotent=True)
    def publish(text: str) -> str:
        """Publish a text (needs approval)."""
        executed.append(text)
        return "published"

    @registry.tool(read_only=True)
    def lookup(key: str) -> str:
        """Look a key up."""
        return f"value of {key}"

    steps = [
        calls(("pub1", "publish", {"text": "first"})),
        *(calls((f"l{i}", "lookup", {"key": str(i)})) for i in range(4)),
        calls(("deeper", "researcher", {"task": "go deeper"})),
        calls(("pub2", "publish", {"text": "second"})),
        answer("published both"),
    ]
    registry.subagent(
        AgentConfig(
            name="researcher",
            model=write_script(tmp_path, steps),
            continue_as_new_after_events=20,
        ),
        name="researcher",
        description="Researches a topic and publishes the findings.",
    )
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start(
            "delegate", model=delegating_model(tmp_path)
        )
        child = AgentRun(client, f"{run.run_id}.r1")
        for call_id in ("pub1", "pub2"):
            snapshot = await wait_for(
                run, lambda s, c=call_id: [w.call_id for w in s.subagent_approvals] == [c]
            )
            [wait] = snapshot.subagent_approvals
            await run.decide_request(
                call_id, True, arguments_hash=wait.arguments_hash, decider="alice"
            )
        result = await run.result()
        child_status = await child.status()
        child_timeline = await child.timeline()
        child_history = await child.handle.fetch_history()
    assert result.status == RunStatus.COMPLETED and executed == ["first", "second"]
    assert child_status.continued >= 1  # pub2 was asked for by a continued run
    deeper = [entry for entry in child_timeline if entry.call_id == "deeper"]
    assert [entry.status for entry in deeper] == ["invalid"], deeper
    await assert_replays(child_history)
