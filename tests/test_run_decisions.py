"""`AgentRun.decide_request`, the one decide path, attacked against the real dev server:
forged deciders, stale, malformed and huge hashes, unknown and decided calls, a sub-agent's
call decided through its parent, and many people deciding one call at once."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from durable_tools import (
    AgentConfig,
    AgentRun,
    AlreadyDecided,
    ApprovalPolicy,
    DecisionError,
    DecisionRecorded,
    DurableTools,
    ExecutionStrategy,
    MalformedDecision,
    NotADecider,
    NothingPending,
    PendingApproval,
    RejectedByRun,
    RunEnded,
    RunNotFound,
    RunStatus,
    StaleRequest,
    WorkerUnavailable,
)
from support import answer, calls, decisions_sent, running_worker, wait_for, write_script
from test_cli_approvals import pay_registry


async def waiting_run(
    client: Client, task_queue: str, tmp_path: Path, *, policy: ApprovalPolicy | None = None
) -> tuple[AgentRun, PendingApproval]:
    """A run waiting for approval of c1 (pay 5), then c2 (pay 7)."""
    model = write_script(
        tmp_path,
        [
            calls(("c1", "pay", {"amount_cents": 5})),
            calls(("c2", "pay", {"amount_cents": 7})),
            answer("ok"),
        ],
    )
    config = AgentConfig(model=model, approval=policy or ApprovalPolicy())
    run = await DurableTools(client, task_queue).start("pay", config=config)
    [pending] = (await wait_for(run, lambda s: bool(s.pending_approvals))).pending_approvals
    return run, pending


async def refused(call: Any, kind: type[DecisionError]) -> DecisionError:
    with pytest.raises(kind) as caught:
        await call
    assert type(caught.value) is kind, caught.value
    return caught.value


async def test_forged_deciders_decide_nothing_and_one_person_counts_once(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    policy = ApprovalPolicy(quorum=2, quorum_tools=("pay",), deciders=("alice", "bob", "group:ops"))
    async with running_worker(client, pay_registry(), task_queue):
        run, pending = await waiting_run(client, task_queue, tmp_path, policy=policy)
        digest = pending.arguments_hash

        def decide(decider: str, groups: tuple[str, ...] = ()) -> Any:
            return run.decide_request(
                "c1", True, arguments_hash=digest, decider=decider, groups=groups
            )

        for forged in (
            "\u0430lice",  # Cyrillic a: looks like alice, is someone else
            "alice via group:ops",  # a membership nobody checked
            "group:ops",  # a group is not a person
            "carol",
            "",
            "   ",
            "\u200b",
            "deadline",  # the name the run records for itself
            "auto:judge",
            "a" * 100_000,
        ):
            error = await refused(decide(forged), NotADecider)
            assert error.deciders == ("alice", "bob", "group:ops")
        # A group counts only when whoever authenticated the person says they are in it.
        await refused(decide("carol", ("sales",)), NotADecider)
        assert await decisions_sent(run) == []

        first = await decide(" Alice ")  # the run's rule: alice, however written
        assert first.verdict == "approved (1 of 2)" and first.decider == " Alice "
        for again in ("alice", "ALICE", "\uff41lice", "al\u200bice", "alice\t"):
            error = await refused(decide(again), RejectedByRun)
            assert "already approved" in error.message
        second = await decide("carol", ("ops",))
        assert second.verdict == "approved" and second.decider == "carol via group:ops"
        assert [d["decider"] for d in await decisions_sent(run)] == [
            " Alice ",
            "carol via group:ops",
        ]
        await run.cancel("test over")
        await run.result()


async def test_stale_malformed_and_huge_hashes_and_call_ids_decide_nothing(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with running_worker(client, pay_registry(), task_queue):
        run, pending = await waiting_run(client, task_queue, tmp_path)

        def approve(call_id: Any = "c1", digest: Any = pending.arguments_hash) -> Any:
            return run.decide_request(call_id, True, arguments_hash=digest, decider="ops")

        await refused(approve(digest="0" * 64), StaleRequest)
        for malformed in (
            pending.arguments_hash[:12],
            pending.arguments_hash + "0",
            "",
            "z" * 64,
            "\uff10" * 64,  # full-width zeros
            pending.arguments_hash[:63] + "\u0665",  # an Arabic-Indic digit
            "a" * 10_000_000,
            None,  # an approval must name the request it approves
            64,
        ):
            error = await refused(approve(digest=malformed), MalformedDecision)
            assert len(error.message) < 400
        for call_id in ("", "c" * 100_000, None):
            await refused(approve(call_id=call_id), MalformedDecision)
        reason = "r" * 100_000
        await refused(
            run.decide_request("c1", False, arguments_hash=None, decider="ops", reason=reason),
            MalformedDecision,
        )
        unknown = await refused(approve(call_id="c9"), NothingPending)
        assert isinstance(unknown, NothingPending) and unknown.pending == ("c1",)
        assert await decisions_sent(run) == []

        # A pasted hash (blanks, capitals) is the hash.
        recorded = await approve(digest=f" {pending.arguments_hash.upper()}\n")
        assert recorded == DecisionRecorded(
            run.run_id, "c1", "approved", "ops", pending.arguments_hash
        )
        await wait_for(run, lambda s: [a.call_id for a in s.pending_approvals] == ["c2"])
        decided = await refused(approve(), AlreadyDecided)
        assert isinstance(decided, AlreadyDecided)
        assert (decided.decided_by, decided.approved) == ("ops", True)
        assert decided.decided_at is not None
        assert "already approved by ops at " in decided.message
        # Denying needs no hash: it denies the one request pending under the id.
        denied = await run.decide_request("c2", False, arguments_hash=None, decider="ops")
        assert denied.verdict == "denied"
        assert (await run.result()).status == RunStatus.COMPLETED
        await refused(approve(call_id="c2"), RunEnded)
    await refused(
        AgentRun(client, "no-such-run").decide_request(
            "c1", False, arguments_hash=None, decider="ops"
        ),
        RunNotFound,
    )


async def test_a_sub_agents_call_is_decided_through_its_parent(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    registry = pay_registry()
    child = write_script(
        tmp_path,
        [
            calls(("p1", "pay", {"amount_cents": 5})),
            calls(("p2", "pay", {"amount_cents": 6})),
            answer("child ok"),
        ],
    )
    registry.subagent(AgentConfig(model=child), name="writer", description="Writes.")
    parent = write_script(tmp_path, [calls(("w1", "writer", {"task": "go"})), answer("done")])
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("go", model=parent)
        for _ in range(150):
            waiting = await run.pending_approvals()
            if waiting:
                break
            await asyncio.sleep(0.1)
        [(child_id, pending)] = waiting
        assert child_id == f"{run.run_id}.w1"
        found = await run.find_request("p1", arguments_hash=pending.arguments_hash)
        assert found.run.run_id == child_id and found.approval == pending
        await refused(
            run.decide_request("p1", True, arguments_hash="1" * 64, decider="ops"),
            StaleRequest,
        )
        recorded = await run.decide_request(
            "p1", True, arguments_hash=pending.arguments_hash, decider="ops"
        )
        assert recorded.run_id == child_id and recorded.verdict == "approved"
        assert await decisions_sent(run) == []  # it went to the sub-agent that waits
        assert len(await decisions_sent(AgentRun(client, child_id))) == 1
        for _ in range(150):
            if [a.call_id for _, a in await run.pending_approvals()] == ["p2"]:
                break
            await asyncio.sleep(0.1)
        decided = await refused(
            run.decide_request("p1", False, arguments_hash=None, decider="bob"), AlreadyDecided
        )
        assert isinstance(decided, AlreadyDecided) and decided.decided_by == "ops"
        await run.decide_request("p2", False, arguments_hash=None, decider="ops")
        assert (await run.result()).status == RunStatus.COMPLETED


async def test_many_people_deciding_one_call_at_once_exactly_one_wins(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with running_worker(client, pay_registry(), task_queue):
        run, pending = await waiting_run(client, task_queue, tmp_path)
        people = [(f"person{i}", i % 2 == 0) for i in range(8)]
        answers = await asyncio.gather(
            *(
                run.decide_request(
                    "c1", approve, arguments_hash=pending.arguments_hash, decider=name
                )
                for name, approve in people
            ),
            return_exceptions=True,
        )
        won = [a for a in answers if isinstance(a, DecisionRecorded)]
        assert len(won) == 1, answers
        [sent] = await decisions_sent(run)
        assert sent["decider"] == won[0].decider
        for lost in answers:
            if lost is won[0]:
                continue
            assert isinstance(lost, AlreadyDecided), lost
            assert lost.decided_by == won[0].decider
            assert lost.approved == (won[0].verdict == "approved")
        await run.cancel("test over")
        await run.result()


async def test_no_worker_is_said_at_once(client: Client, task_queue: str) -> None:
    run = await DurableTools(client, task_queue).start("nobody serves me", model="scripted:x")
    try:
        error = await refused(
            run.decide_request("c1", False, arguments_hash=None, decider="ops"),
            WorkerUnavailable,
        )
        assert isinstance(error, WorkerUnavailable) and error.task_queue == task_queue
        assert "nothing was decided" in error.message
    finally:
        await run.handle.terminate("test over")


async def test_a_call_is_decided_while_a_sub_agent_waits_for_its_own_workers(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # The run asks about c1 while its sub-agent runs on a task queue no worker polls (yet):
    # that sub-agent cannot say what it waits for, and it must not stop anyone deciding c1.
    registry = pay_registry()
    child = write_script(tmp_path, [answer("child ok")])
    registry.subagent(
        AgentConfig(model=child),
        name="writer",
        description="Writes.",
        task_queue=f"{task_queue}-elsewhere",
    )
    parent = write_script(
        tmp_path,
        [calls(("c1", "pay", {"amount_cents": 5}), ("w1", "writer", {"task": "go"})), answer("ok")],
    )
    config = AgentConfig(model=parent, strategy=ExecutionStrategy(mode="parallel"))
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("go", config=config)
        [pending] = (await wait_for(run, lambda s: bool(s.pending_approvals))).pending_approvals
        for _ in range(150):  # the sub-agent's run is started (and waits for a worker)
            if any(r.child_run_id and r.status == "running" for r in await run.timeline()):
                break
            await asyncio.sleep(0.1)
        await AgentRun(client, f"{run.run_id}.w1").handle.describe()
        assert [a.call_id for _, a in await run.pending_approvals()] == ["c1"]
        recorded = await run.decide_request(
            "c1", True, arguments_hash=pending.arguments_hash, decider="ops"
        )
        assert recorded.verdict == "approved" and recorded.run_id == run.run_id
        # A cancel would wait for the sub-agent, which no worker runs: end both.
        await run.handle.terminate("test over")
        await AgentRun(client, f"{run.run_id}.w1").handle.terminate("test over")
