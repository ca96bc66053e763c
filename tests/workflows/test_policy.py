"""The layered approval policy on a real dev server: each layer, grants, quorum, batches."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowUpdateFailedError

from durable_tools import (
    AgentConfig,
    AgentRun,
    ApprovalPolicy,
    DurableTools,
    ExecutionStrategy,
    GrantRequest,
    Identity,
    RunStatus,
    ToolRegistry,
)
from durable_tools.worker import GrantStore
from durable_tools.workflows import Constraint, RunSnapshot
from support import answer, assert_not_wedged, calls, running_worker, wait_for, write_script


async def rejected(update: Any, text: str) -> None:
    """The update is refused by the run's validator, naming `text`."""
    with pytest.raises(WorkflowUpdateFailedError) as failure:
        await update
    assert text in str(failure.value.cause)


def pending(snapshot: RunSnapshot) -> dict[str, Any]:
    return {p.call_id: p for p in snapshot.pending_approvals}


def registry(executed: list[Any]) -> ToolRegistry:
    tools = ToolRegistry()

    @tools.tool(approval=True, idempotent=True)
    def refund(order_id: str, amount_cents: int) -> str:
        """Refund an order."""
        executed.append(("refund", order_id, amount_cents))
        return f"refunded {amount_cents}"

    @tools.tool(read_only=True)
    def lookup(order_id: str) -> str:
        """Look an order up."""
        executed.append(("lookup", order_id))
        return "found"

    @tools.tool(approval=True, spends_money=True, idempotent=True)
    def pay(amount_cents: int) -> str:
        """Pay a supplier."""
        executed.append(("pay", amount_cents))
        return "paid"

    return tools


def refund(call_id: str, amount: int) -> dict[str, Any]:
    return calls((call_id, "refund", {"order_id": call_id, "amount_cents": amount}))


async def layers(run: AgentRun) -> dict[str, str | None]:
    return {r.call_id: r.policy_layer for r in await run.timeline()}


async def test_skip_switch_runs_everything_without_asking(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    executed: list[Any] = []
    config = AgentConfig(
        model=write_script(tmp_path, [refund("r1", 5), answer("done")]),
        approval=ApprovalPolicy(require="all", skip_all_approvals_unsafe=True),
    )
    async with running_worker(client, registry(executed), task_queue):
        run = await DurableTools(client, task_queue).start("go", config=config)
        result = await run.result()
        assert await layers(run) == {"r1": "skip_all"}
        await assert_not_wedged(run.handle)
    assert result.status == RunStatus.COMPLETED
    assert executed == [("refund", "r1", 5)]


async def test_safe_tools_allow_and_deny_lists(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    executed: list[Any] = []
    config = AgentConfig(
        model=write_script(
            tmp_path,
            [
                calls(("l1", "lookup", {"order_id": "A"})),
                refund("r1", 5),
                calls(("p1", "pay", {"amount_cents": 3})),
                answer("done"),
            ],
        ),
        approval=ApprovalPolicy(
            require="all", allow_safe_tools=True, allow_tools=("refund",), deny_tools=("pay",)
        ),
    )
    async with running_worker(client, registry(executed), task_queue):
        run = await DurableTools(client, task_queue).start("go", config=config)
        result = await run.result()
        timeline = {r.call_id: r for r in await run.timeline()}
        conversation = await run.conversation()
        await assert_not_wedged(run.handle)
    assert result.status == RunStatus.COMPLETED
    assert executed == [("lookup", "A"), ("refund", "r1", 5)]  # never paid
    assert timeline["l1"].policy_layer == "safe_tool"
    assert timeline["r1"].policy_layer == "allow_list"
    assert timeline["p1"].policy_layer == "deny_list" and timeline["p1"].status == "denied"
    reply = next(m.content for m in conversation if m.role == "tool" and m.tool_call_id == "p1")
    assert "denied by policy" in (reply or "")


async def test_the_default_policy_still_asks_for_a_read_only_tool_under_require_all(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    config = AgentConfig(
        model=write_script(tmp_path, [calls(("l1", "lookup", {"order_id": "A"})), answer("x")]),
        approval=ApprovalPolicy(require="all"),
    )
    async with running_worker(client, registry([]), task_queue):
        run = await DurableTools(client, task_queue).start("go", config=config)
        await wait_for(run, lambda s: "l1" in pending(s))
        await run.approve("l1", decider="alice")
        await run.result()
        assert await layers(run) == {"l1": "person"}
        await assert_not_wedged(run.handle)


async def test_run_grant_with_constraint_then_revoked(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    executed: list[Any] = []
    model = write_script(
        tmp_path,
        [
            refund("r1", 500),
            refund("r2", 9_000),  # under the bound: the grant covers it
            refund("r3", 20_000),  # over the bound: asked
            refund("r4", 100),  # after the revocation: asked
            answer("done"),
        ],
    )
    bound = GrantRequest(constraints=(Constraint(path="amount_cents", op="<=", value=10_000),))
    async with running_worker(client, registry(executed), task_queue):
        run = await DurableTools(client, task_queue).start("refunds", model=model)
        await wait_for(run, lambda s: "r1" in pending(s))
        await run.approve("r1", decider="alice", reason="regular", grant=bound)
        snapshot = await wait_for(run, lambda s: "r3" in pending(s))
        [grant] = snapshot.standing_grants
        assert grant.granted_by == "alice" and grant.scope == "run"
        assert grant.constraints[0].value == 10_000
        await run.deny("r3", decider="alice")
        assert await run.revoke_grant(grant.grant_id, revoked_by="carol") == "revoked"
        with pytest.raises(WorkflowUpdateFailedError):  # twice: no live grant of that id
            await run.revoke_grant(grant.grant_id)
        await wait_for(run, lambda s: "r4" in pending(s))
        await run.approve("r4", decider="bob")
        result = await run.result()
        timeline = await layers(run)
        grants = await run.grants()
        events = [e.event for e in await run.events()]
        await assert_not_wedged(run.handle)
    assert result.status == RunStatus.COMPLETED
    assert [e[2] for e in executed] == [500, 9_000, 100]
    assert timeline == {
        "r1": "person",
        "r2": f"grant:{grant.grant_id}",
        "r3": "person",
        "r4": "person",
    }
    assert grants[0].revoked_by == "carol"
    assert "grant.created" in events and "grant.revoked" in events


async def test_a_grant_needs_an_approval_and_a_policy_for_identity_scope(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    model = write_script(tmp_path, [refund("r1", 5), answer("x")])
    async with running_worker(client, registry([]), task_queue):
        run = await DurableTools(client, task_queue).start("go", model=model)
        await wait_for(run, lambda s: "r1" in pending(s))
        await rejected(
            run.approve("r1", grant=GrantRequest(scope="identity", duration_seconds=60)),
            "identity",
        )
        await rejected(
            run.decide("r1", approve=False, grant=GrantRequest()),
            "approval",
        )
        await run.approve("r1")
        assert (await run.result()).status == RunStatus.COMPLETED
        await assert_not_wedged(run.handle)


async def test_identity_grants_outlive_the_run_expire_and_revoke(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    executed: list[Any] = []
    store = GrantStore(tmp_path / "grants.json")
    alice = Identity(tenant="acme", user="alice")
    policy = ApprovalPolicy(identity_grants=True)

    def config(*steps: dict[str, Any]) -> AgentConfig:
        return AgentConfig(model=write_script(tmp_path, [*steps, answer("ok")]), approval=policy)

    async with running_worker(client, registry(executed), task_queue, grant_store=store):
        dt = DurableTools(client, task_queue)
        first = await dt.start("one", config=config(refund("r1", 100)), identity=alice)
        await wait_for(first, lambda s: "r1" in pending(s))
        await first.approve(
            "r1",
            decider="boss",
            grant=GrantRequest(
                scope="identity",
                duration_seconds=3600,
                constraints=(Constraint(path="amount_cents", op="<", value=1000),),
            ),
        )
        await first.result()
        [grant] = await store.all()
        assert grant.identity == "agent=agent;tenant=acme;user=alice" and grant.granted_by == "boss"

        # Another run of the same identity: allowed by the grant, within its bound.
        second = await dt.start("two", config=config(refund("r2", 200)), identity=alice)
        assert (await second.result()).status == RunStatus.COMPLETED
        assert await layers(second) == {"r2": f"grant:{grant.grant_id}"}

        # Another identity is asked.
        bob = Identity(tenant="acme", user="bob")
        third = await dt.start("three", config=config(refund("r3", 200)), identity=bob)
        await wait_for(third, lambda s: "r3" in pending(s))
        await third.deny("r3")
        await third.result()

        # Revoked: asked again.
        await store.revoke(grant.grant_id, "security")
        fourth = await dt.start("four", config=config(refund("r4", 200)), identity=alice)
        await wait_for(fourth, lambda s: "r4" in pending(s))
        await fourth.approve(
            "r4",
            grant=GrantRequest(scope="identity", duration_seconds=0.5),
        )
        await fourth.result()
        short = next(g for g in await store.all() if g.revoked_at is None)
        # Expired: asked again (wait until the grant's own end has passed).
        assert short.expires_at is not None
        while await store.find(grant.identity, "refund", {"order_id": "x", "amount_cents": 1}):
            await asyncio.sleep(0.1)
        fifth = await dt.start("five", config=config(refund("r5", 1)), identity=alice)
        await wait_for(fifth, lambda s: "r5" in pending(s))
        await fifth.deny("r5")
        await fifth.result()
        for run in (first, second, third, fourth, fifth):
            await assert_not_wedged(run.handle)
    assert [e[1] for e in executed] == ["r1", "r2", "r4"]


async def test_two_person_rule(client: Client, task_queue: str, tmp_path: Path) -> None:
    executed: list[Any] = []
    model = write_script(
        tmp_path,
        [
            calls(("p1", "pay", {"amount_cents": 100})),
            calls(("p2", "pay", {"amount_cents": 200})),
            refund("r1", 5),
            answer("done"),
        ],
    )
    config = AgentConfig(model=model, approval=ApprovalPolicy(quorum=2))
    async with running_worker(client, registry(executed), task_queue):
        run = await DurableTools(client, task_queue).start("pay", config=config)
        snapshot = await wait_for(run, lambda s: "p1" in pending(s))
        assert pending(snapshot)["p1"].approvals_required == 2
        assert await run.approve("p1", decider="alice") == "approved (1 of 2)"
        snapshot = await run.status()
        assert pending(snapshot)["p1"].approved_by == ["alice"]
        assert executed == []  # one approval is not enough
        await rejected(
            run.approve("p1", decider="alice"),
            "already approved",
        )
        assert await run.approve("p1", decider="bob") == "approved"
        await wait_for(run, lambda s: "p2" in pending(s))
        await run.approve("p2", decider="alice")
        assert await run.deny("p2", decider="bob", reason="too much") == "denied"
        # A tool that does not spend money needs one approval.
        snapshot = await wait_for(run, lambda s: "r1" in pending(s))
        assert pending(snapshot)["r1"].approvals_required == 1
        await run.approve("r1", decider="carol")
        await run.result()
        timeline = {r.call_id: r for r in await run.timeline()}
        await assert_not_wedged(run.handle)
    assert executed == [("pay", 100), ("refund", "r1", 5)]
    assert timeline["p1"].decided_by == "alice+bob"
    assert timeline["p2"].status == "denied" and timeline["p2"].decided_by == "bob"


async def test_batch_approval_is_all_or_nothing(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    executed: list[Any] = []
    model = write_script(
        tmp_path,
        [
            calls(
                ("a", "refund", {"order_id": "a", "amount_cents": 1}),
                ("b", "refund", {"order_id": "b", "amount_cents": 2}),
                ("c", "refund", {"order_id": "c", "amount_cents": 3}),
            ),
            answer("done"),
        ],
    )
    config = AgentConfig(model=model, strategy=ExecutionStrategy(mode="parallel"))
    async with running_worker(client, registry(executed), task_queue):
        run = await DurableTools(client, task_queue).start("batch", config=config)
        snapshot = await wait_for(run, lambda s: len(s.pending_approvals) == 3)
        hashes = {p.call_id: p.arguments_hash for p in snapshot.pending_approvals}
        # One stale hash rejects the whole batch: nothing applied.
        await rejected(
            run.decide_batch([("a", True, hashes["a"]), ("b", True, hashes["a"])], decider="alice"),
            "arguments hash",
        )
        await rejected(
            run.decide_batch([("a", True, hashes["a"]), ("a", True, hashes["a"])]),
            "twice",
        )
        assert len((await run.status()).pending_approvals) == 3
        verdicts = await run.decide_batch(
            [("a", True, hashes["a"]), ("b", False, hashes["b"]), ("c", True, hashes["c"])],
            decider="alice",
            reason="reviewed together",
        )
        assert verdicts == ["approved", "denied", "approved"]
        await run.result()
        timeline = {r.call_id: r for r in await run.timeline()}
        await assert_not_wedged(run.handle)
    assert sorted(e[1] for e in executed) == ["a", "c"]
    assert timeline["b"].status == "denied" and timeline["a"].decided_by == "alice"


async def test_set_policy_mid_run_is_validated_audited_and_visible(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    executed: list[Any] = []
    model = write_script(tmp_path, [refund("r1", 1), refund("r2", 2), answer("done")])
    async with running_worker(client, registry(executed), task_queue):
        run = await DurableTools(client, task_queue).start("go", model=model)
        snapshot = await wait_for(run, lambda s: "r1" in pending(s))
        assert snapshot.policy == ApprovalPolicy()
        # A malformed policy (an unknown key) is rejected before it enters history.
        with pytest.raises(WorkflowUpdateFailedError):
            await run.handle.execute_update(
                "set_policy", {"policy": {"allow_tool": ["refund"]}, "changed_by": "x"}
            )
        new = ApprovalPolicy(allow_tools=("refund",))
        await run.set_policy(new, changed_by="ops", reason="backlog")
        assert await run.policy() == new
        # Operators see the live policy in the UI's current details.
        metadata = await run.handle.query("__temporal_workflow_metadata")
        assert "approval policy: require tool; allow refund" in metadata.current_details
        await run.approve("r1")  # already pending: still needs its decision
        await run.result()
        timeline = await layers(run)
        events = [e for e in await run.events() if e.event == "policy.changed"]
        await assert_not_wedged(run.handle)
    assert timeline == {"r1": "person", "r2": "allow_list"}
    assert events[0].detail == "by ops: backlog"
    assert len(executed) == 2
