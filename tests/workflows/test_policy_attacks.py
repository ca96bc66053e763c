"""Attacks on the approval promise on a real dev server: a call runs only with the approval
of exactly the people its policy names, for exactly the arguments they saw, and no caller
can wedge a run. Tests written for a break failed before the fix that came with them."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from policy_support import ALICE, events, pay, pending, refund, registry, rejected
from temporalio.client import (
    Client,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from durable_tools import (
    AgentConfig,
    ApprovalPolicy,
    DurableTools,
    GrantRequest,
    RunStatus,
    ToolRegistry,
)
from durable_tools.protocol._types import PolicyChange
from durable_tools.worker import GrantStore, workflow_runner
from durable_tools.workflows import AgentWorkflow, ApprovalDecision
from support import answer, assert_not_wedged, calls, running_worker, wait_for, write_script


async def replays(handle: WorkflowHandle[Any, Any]) -> None:
    """The run's history replays on today's code without a non-determinism error."""
    history = await handle.fetch_history()
    replayer = Replayer(
        workflows=[AgentWorkflow],
        data_converter=pydantic_data_converter,
        workflow_runner=workflow_runner(strict=False),
    )
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, result.replay_failure


async def test_a_stricter_policy_reaches_calls_already_pending(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # Broke: a pending call kept the policy it was asked under, so an operator who denied
    # a tool or named other deciders mid-run still saw it run on one approval from anyone.
    executed: list[Any] = []
    model = write_script(
        tmp_path,
        [refund("r1", 1), pay("p1", 2), refund("r2", 3), refund("r3", 4), answer("done")],
    )
    security = "security"
    # A fresh worker for every task: each step replays the run from its history.
    async with running_worker(client, registry(executed), task_queue, max_cached_workflows=0):
        run = await DurableTools(client, task_queue).start("go", model=model)
        await wait_for(run, lambda s: "r1" in pending(s))
        # Refunds are denied now: the one waiting is denied, nobody can approve it.
        await run.set_policy(ApprovalPolicy(deny_tools=("refund",)), changed_by=security)
        await wait_for(run, lambda s: "p1" in pending(s))

        # Only bob and carol decide now, also for the payment on screen.
        await run.set_policy(ApprovalPolicy(deciders=("bob", "carol")), changed_by=security)
        snapshot = await run.status()
        assert pending(snapshot)["p1"].deciders == ["bob", "carol"]
        await rejected(run.approve("p1", decider="alice"), "may not decide")
        two = ApprovalPolicy(deciders=("alice", "bob"), quorum=2, quorum_tools=("refund",))
        await run.set_policy(two, changed_by=security)
        await rejected(run.approve("p1", decider="carol"), "may not decide")
        assert executed == []
        assert await run.approve("p1", decider="bob") == "approved"

        # Approvals given before a change count only from people the new policy names.
        snapshot = await wait_for(run, lambda s: "r2" in pending(s))
        assert pending(snapshot)["r2"].approvals_required == 2
        assert await run.approve("r2", decider="alice") == "approved (1 of 2)"
        await run.set_policy(
            two.model_copy(update={"deciders": ("bob", "carol")}), changed_by=security
        )
        snapshot = await run.status()
        assert pending(snapshot)["r2"].approved_by == []
        assert await run.approve("r2", decider="bob") == "approved (1 of 2)"
        assert executed == [("pay", 2)]
        assert await run.approve("r2", decider="carol") == "approved"

        # A looser policy never opens a call already asked to more people.
        await wait_for(run, lambda s: "r3" in pending(s))
        await run.set_policy(ApprovalPolicy(), changed_by=security)
        snapshot = await run.status()
        assert pending(snapshot)["r3"].approvals_required == 2
        assert pending(snapshot)["r3"].deciders == ["bob", "carol"]
        await rejected(run.approve("r3", decider="alice"), "may not decide")
        await run.approve("r3", decider="bob")
        await run.approve("r3", decider="carol")
        result = await run.result()
        records = {r.call_id: (r.status, r.decided_by) for r in await run.timeline()}
        refitted = await events(run, "approval.refitted")
        await assert_not_wedged(run.handle, allowed=0)
        await replays(run.handle)
    assert result.status == RunStatus.COMPLETED
    assert executed == [("pay", 2), ("refund", 3), ("refund", 4)]
    # Denied, never run (`executed` above). Who the record names depends on where the
    # change met the call: "policy" when it reached the waiting call, none when a slow
    # update (10 s in a loaded CI run) let the replayed call meet the new policy first.
    assert records["r1"] in (("denied", "policy"), ("denied", None)), records["r1"]
    assert records["p1"] == ("completed", "bob")
    assert records["r2"] == ("completed", "bob+carol")
    assert refitted == [
        "denied by the new policy",
        "deciders bob, carol",
        "deciders alice, bob",
        "deciders bob, carol; approvals no longer counted: alice",
    ]


async def test_an_escalation_after_a_policy_change_follows_the_live_policy(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # Broke with the refit alone: the deadline escalated to the old policy's people.
    executed: list[Any] = []
    model = write_script(tmp_path, [refund("r1", 1), answer("done")])

    def escalating(decider: str, to: str) -> ApprovalPolicy:
        # The escalated wait lasts an hour: with the first deadline's one second it
        # expired before dave's decision whenever the machine was slow.
        return ApprovalPolicy(
            deciders=(decider,),
            timeout_seconds=1,
            on_timeout="escalate",
            escalate_to=(to,),
            escalation_timeout_seconds=3600,
        )

    config = AgentConfig(model=model, approval=escalating("alice", "carol"))
    async with running_worker(client, registry(executed), task_queue, max_cached_workflows=0):
        run = await DurableTools(client, task_queue).start("go", config=config)
        await wait_for(run, lambda s: "r1" in pending(s))
        await run.set_policy(escalating("bob", "dave"), changed_by="security")
        snapshot = await wait_for(run, lambda s: pending(s)["r1"].escalated)
        assert pending(snapshot)["r1"].deciders == ["dave"]
        await rejected(run.approve("r1", decider="carol"), "may not decide")
        await run.approve("r1", decider="dave")
        await run.result()
        await assert_not_wedged(run.handle, allowed=0)
        await replays(run.handle)
    assert executed == [("refund", 1)]


async def test_one_person_by_signal_and_update_in_one_workflow_task_counts_once(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # Held: a validator and its handler run in one step, so the signal's approval is seen
    # by the update's validator (or the other way round) whichever comes first.
    executed: list[Any] = []
    model = write_script(tmp_path, [pay("p1", 9), answer("done")])
    policy = ApprovalPolicy(quorum=2, deciders=("alice", "bob", "carol"))
    tools = registry(executed)
    async with running_worker(client, tools, task_queue, max_cached_workflows=0):
        run = await DurableTools(client, task_queue).start(
            "go", config=AgentConfig(model=model, approval=policy)
        )
        await wait_for(run, lambda s: "p1" in pending(s))
    # No worker: both decisions wait for the same workflow task.
    await run.handle.signal(
        "decision", ApprovalDecision(call_id="p1", approve=True, decider="alice")
    )
    update = asyncio.create_task(
        run.handle.execute_update(
            "decide", ApprovalDecision(call_id="p1", approve=True, decider=" ALICE\u200b")
        )
    )
    # Whether the update reaches the signal's workflow task or a later one, it is refused.
    await asyncio.sleep(0)
    async with running_worker(client, tools, task_queue, max_cached_workflows=0):
        with pytest.raises(WorkflowUpdateFailedError):
            await update
        snapshot = await wait_for(run, lambda s: pending(s)["p1"].approved_by != [])
        assert pending(snapshot)["p1"].approved_by == ["alice"]
        assert executed == []
        await run.approve("p1", decider="bob")
        await run.result()
        await assert_not_wedged(run.handle, allowed=0)
    assert executed == [("pay", 9)]


async def test_malformed_or_huge_policy_messages_never_wedge_a_run(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    executed: list[Any] = []
    model = write_script(tmp_path, [refund("r1", 1), answer("done")])
    async with running_worker(client, registry(executed), task_queue):
        run = await DurableTools(client, task_queue).start("go", model=model)
        snapshot = await wait_for(run, lambda s: "r1" in pending(s))
        digest = pending(snapshot)["r1"].arguments_hash
        item = {"call_id": "r1", "approve": True, "arguments_hash": digest}
        attacks: list[tuple[str, Any]] = [
            ("set_policy", None),
            ("set_policy", {"policy": None}),
            ("set_policy", {"policy": {"deciders": "alice"}}),
            ("set_policy", {"policy": {"deciders": [f"person{i}" for i in range(20_000)]}}),
            ("set_policy", {"policy": {"quorum": 10**400}}),
            ("set_policy", {"policy": {"quorum": 2}, "reason": "x" * 3_000}),
            ("set_policy", {"policy": {"deny_tools": [["refund"]]}}),
            ("revoke_grant", None),
            ("revoke_grant", {"grant_id": 5}),
            ("revoke_grant", {"grant_id": "x" * 10_000}),
            ("decide_batch", None),
            ("decide_batch", {"items": []}),
            ("decide_batch", {"items": [item] * 65, "decider": "a"}),
            ("decide_batch", {"items": [item, item], "decider": "a"}),
            ("decide_batch", {"items": [item], "decider": "a" * 201}),
            ("decide_batch", {"items": [item], "decider": "group:ops"}),
            ("decide_batch", {"items": [item], "decider": "\u200b"}),
            ("decide", {"call_id": "r1", "approve": True, "reason": "r" * 1_000_000}),
            ("decide", {"call_id": "r1", "approve": "yes please"}),
            (
                "decide",
                {
                    "call_id": "r1",
                    "approve": True,
                    "grant": {"constraints": [{"path": "a", "op": "<=", "value": 1e400}]},
                },
            ),
        ]
        for name, payload in attacks:
            with pytest.raises(WorkflowUpdateFailedError):
                await run.handle.execute_update(name, payload)
        for signal in (None, {"call_id": "r1"}, {"call_id": "r1", "approve": True, "x": 1}):
            await run.handle.signal("decision", signal)
        assert executed == []
        assert await run.approve("r1", decider="alice", arguments_hash=digest) == "approved"
        result = await run.result()
        await assert_not_wedged(run.handle, allowed=0)
    assert result.status == RunStatus.COMPLETED
    assert executed == [("refund", 1)]


async def test_a_broken_grant_store_fails_the_call_closed_and_never_wedges(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # Held: the lookup fails (three attempts), the call is not run, the model is told,
    # and the run goes on.
    executed: list[Any] = []
    path = tmp_path / "grants.json"
    path.write_text('[{"grant_id": "g1", "tool": "refund"')  # cut off mid-write by hand
    model = write_script(tmp_path, [refund("r1", 1), answer("done")])
    config = AgentConfig(model=model, approval=ApprovalPolicy(identity_grants=True))
    store = GrantStore(path)
    async with running_worker(client, registry(executed), task_queue, grant_store=store):
        run = await DurableTools(client, task_queue).start("go", config=config, identity=ALICE)
        result = await run.result()
        [record] = await run.timeline()
        await assert_not_wedged(run.handle, allowed=0)
    assert result.status == RunStatus.COMPLETED
    assert executed == []
    assert "could not be prepared" in (record.result or "")


async def test_runs_that_set_grants_aside_replay_on_a_fresh_worker(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    executed: list[Any] = []
    store = GrantStore(tmp_path / "grants.json")
    model = write_script(
        tmp_path, [refund("r1", 1), refund("r2", 2), pay("p1", 3), refund("r3", 4), answer("ok")]
    )
    config = AgentConfig(model=model, approval=ApprovalPolicy(identity_grants=True))
    async with running_worker(
        client, registry(executed), task_queue, grant_store=store, max_cached_workflows=0
    ):
        run = await DurableTools(client, task_queue).start("go", config=config, identity=ALICE)
        await wait_for(run, lambda s: "r1" in pending(s))
        await run.approve(
            "r1", decider="alice", grant=GrantRequest(scope="identity", duration_seconds=600)
        )
        await wait_for(run, lambda s: "p1" in pending(s))  # r2 ran on alice's grant
        change = ApprovalPolicy(identity_grants=True, deciders=("bob",))
        await run.handle.execute_update("set_policy", PolicyChange(policy=change))
        await run.approve("p1", decider="bob")
        await wait_for(run, lambda s: "r3" in pending(s))  # alice's grant set aside
        await run.approve("r3", decider="bob")
        await run.result()
        await assert_not_wedged(run.handle, allowed=0)
        await replays(run.handle)
    assert executed == [("refund", 1), ("refund", 2), ("pay", 3), ("refund", 4)]


async def test_a_tool_denied_during_its_preflight_is_denied_not_asked_of_anyone(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # Broke: a `set_policy` denying the tool while the call's preflight ran (here: its
    # approval summary, rendered on the worker) came too early for the refit (the call was
    # not waiting yet) and too late for the deny list read before the preflight: the call
    # went to a person, and to anyone, since a deny verdict names no deciders.
    executed: list[Any] = []
    asked, denied = threading.Event(), threading.Event()

    def summary(args: dict[str, Any]) -> str:
        asked.set()
        denied.wait(4)  # under the worker's 5 s limit on summary functions
        return f"tip {args['amount_cents']}"

    tools = ToolRegistry()

    @tools.tool(approval=True, approval_summary=summary, idempotent=True)
    def tip(amount_cents: int) -> str:
        """Leave a tip."""
        executed.append(amount_cents)
        return "tipped"

    model = write_script(tmp_path, [calls(("t1", "tip", {"amount_cents": 500})), answer("done")])
    config = AgentConfig(model=model, approval=ApprovalPolicy(deciders=("alice",)))
    async with running_worker(client, tools, task_queue, max_cached_workflows=0):
        run = await DurableTools(client, task_queue).start("tip", config=config)
        assert await asyncio.to_thread(asked.wait, 30)
        policy = ApprovalPolicy(deciders=("alice",), deny_tools=("tip",))
        await run.set_policy(policy, changed_by="security")
        denied.set()
        result = await asyncio.wait_for(run.result(), 60)
        (record,) = await run.timeline()
        await assert_not_wedged(run.handle, allowed=0)
        await replays(run.handle)
    assert result.status == RunStatus.COMPLETED
    assert executed == []
    assert (record.status, record.policy_layer) == ("denied", "deny_list")
