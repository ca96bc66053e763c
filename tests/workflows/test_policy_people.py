"""Who may approve, on a real dev server: grants stand only where their maker could approve
under the policy in force, one person counts once, and durations are bounded."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from policy_support import ALICE, events, pay, pending, refund, registry, rejected
from pydantic import ValidationError
from temporalio.client import Client, WorkflowUpdateFailedError

from durable_tools import (
    AgentConfig,
    AgentRun,
    ApprovalPolicy,
    DurableTools,
    GrantRequest,
    RunStatus,
)
from durable_tools.worker import GrantStore
from durable_tools.workflows import ApprovalDecision
from support import answer, assert_not_wedged, running_worker, wait_for, write_script


async def test_an_identity_grant_never_stands_in_for_two_people_or_a_non_decider(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    executed: list[Any] = []
    store = GrantStore(tmp_path / "grants.json")

    def config(step: dict[str, Any], **policy: Any) -> AgentConfig:
        return AgentConfig(
            model=write_script(tmp_path, [step, answer("ok")]),
            approval=ApprovalPolicy(identity_grants=True, **policy),
        )

    async with running_worker(client, registry(executed), task_queue, grant_store=store):
        dt = DurableTools(client, task_queue)
        # One approval was enough here: boss approves and stops asking for `pay`.
        first = await dt.start("one", config=config(pay("p1", 5)), identity=ALICE)
        await wait_for(first, lambda s: "p1" in pending(s))
        await first.approve(
            "p1", decider="boss", grant=GrantRequest(scope="identity", duration_seconds=3600)
        )
        await first.result()
        [grant] = await store.all()

        # Two approvals from bob and carol: boss's grant is one person's, and not theirs.
        two = await dt.start(
            "two",
            config=config(pay("p2", 999_999), quorum=2, deciders=("bob", "carol")),
            identity=ALICE,
        )
        snapshot = await wait_for(two, lambda s: "p2" in pending(s))
        assert pending(snapshot)["p2"].approvals_required == 2
        await two.approve("p2", decider="bob")
        assert executed == [("pay", 5)]  # one approval of two: still waiting
        await two.deny("p2", decider="carol")
        await two.result()

        # One approval, but boss is not among the deciders: asked.
        named = await dt.start(
            "three", config=config(pay("p3", 999_999), deciders=("bob",)), identity=ALICE
        )
        await wait_for(named, lambda s: "p3" in pending(s))
        await named.deny("p3", decider="bob")
        await named.result()

        # Boss is a decider and one approval is enough: the grant stands.
        stands = await dt.start(
            "four", config=config(pay("p4", 7), deciders=("BOSS", "bob")), identity=ALICE
        )
        assert (await stands.result()).status == RunStatus.COMPLETED
        layers = {r.call_id: r.policy_layer for r in await stands.timeline()}
        for run in (first, two, named, stands):
            await assert_not_wedged(run.handle)
    assert executed == [("pay", 5), ("pay", 7)]
    assert layers == {"p4": f"grant:{grant.grant_id}"}


async def test_identity_grants_need_an_identity_and_are_scoped_to_the_agent(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    executed: list[Any] = []
    store = GrantStore(tmp_path / "grants.json")
    policy = ApprovalPolicy(identity_grants=True)
    forever = GrantRequest(scope="identity", duration_seconds=3600)

    def config(name: str, step: dict[str, Any]) -> AgentConfig:
        return AgentConfig(
            name=name, model=write_script(tmp_path, [step, answer("ok")]), approval=policy
        )

    async with running_worker(client, registry(executed), task_queue, grant_store=store):
        dt = DurableTools(client, task_queue)
        # A run acting for nobody cannot keep a grant for "everybody without an identity".
        anonymous = await dt.start("a", config=config("billing", refund("r1", 1)))
        await wait_for(anonymous, lambda s: "r1" in pending(s))
        await rejected(anonymous.approve("r1", grant=forever), "acts for no identity")
        await anonymous.approve("r1")
        await anonymous.result()
        assert await store.all() == []

        # Alice's grant in the billing agent does not approve the refunds agent's calls.
        billing = await dt.start("b", config=config("billing", refund("r2", 2)), identity=ALICE)
        await wait_for(billing, lambda s: "r2" in pending(s))
        await billing.approve("r2", grant=forever)
        await billing.result()
        other = await dt.start("c", config=config("refunds", refund("r3", 10**9)), identity=ALICE)
        await wait_for(other, lambda s: "r3" in pending(s))
        await other.deny("r3")
        await other.result()
        again = await dt.start("d", config=config("billing", refund("r4", 4)), identity=ALICE)
        assert (await again.result()).status == RunStatus.COMPLETED
        for run in (anonymous, billing, other, again):
            await assert_not_wedged(run.handle)
    assert executed == [("refund", 1), ("refund", 2), ("refund", 4)]


async def test_one_person_counts_once_however_named(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    executed: list[Any] = []
    model = write_script(tmp_path, [pay("p1", 1_000_000), pay("p2", 3), answer("done")])
    policy = ApprovalPolicy(quorum=2, deciders=("alice", "bob", "group:ops"))
    async with running_worker(client, registry(executed), task_queue):
        run = await DurableTools(client, task_queue).start(
            "go", config=AgentConfig(model=model, approval=policy)
        )
        await wait_for(run, lambda s: "p1" in pending(s))
        assert await run.approve("p1", decider="alice") == "approved (1 of 2)"
        for alias in (
            "ALICE",
            " Alice ",
            "\uff41lice",
            "alice via group:ops",
            "Alice via GROUP:OPS",
        ):
            await rejected(run.approve("p1", decider=alias), "already approved")
        # The signal path (webhooks) refuses it the same way, in the run's events.
        await run.handle.signal(
            "decision", ApprovalDecision(call_id="p1", approve=True, decider="ALICE")
        )
        refused = await wait_for_event(run, "approval.rejected")
        assert executed == []
        # A look-alike from another script is not alice, and not a decider either.
        await rejected(run.approve("p1", decider="\u0430lice"), "may not decide")
        assert await run.approve("p1", decider="Bob") == "approved"
        await wait_for(run, lambda s: "p2" in pending(s))
        await run.approve("p2", decider="carol via group:ops")
        await run.approve("p2", decider="BOB")
        await run.result()
        decided = {r.call_id: r.decided_by for r in await run.timeline()}
        await assert_not_wedged(run.handle)
    assert executed == [("pay", 1_000_000), ("pay", 3)]
    assert "already approved" in refused
    assert decided == {"p1": "alice+Bob", "p2": "carol via group:ops+BOB"}


async def wait_for_event(run: AgentRun, name: str) -> str:
    async def found() -> list[str]:
        return await events(run, name)

    for _ in range(200):
        details = await found()
        if details:
            return details[0]
        await run.handle.query("status")  # let the signal be processed
    raise AssertionError(f"no {name} event")


def test_a_quorum_the_named_deciders_cannot_reach_is_refused() -> None:
    with pytest.raises(ValidationError, match="distinct deciders"):
        ApprovalPolicy(quorum=2, deciders=("alice", "ALICE"))
    with pytest.raises(ValidationError, match="distinct escalate_to"):
        ApprovalPolicy(
            quorum=2,
            deciders=("alice", "bob"),
            timeout_seconds=60,
            on_timeout="escalate",
            escalate_to=("carol", " Carol"),
        )
    assert ApprovalPolicy(quorum=2, deciders=("alice", "group:ops")).quorum == 2


async def test_a_stricter_policy_sets_earlier_run_grants_aside(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    executed: list[Any] = []
    model = write_script(
        tmp_path,
        [
            refund("r1", 1),
            refund("r2", 2),  # runs on alice's grant
            pay("p1", 5),  # a pause, to change the policy at
            refund("r3", 3),
            refund("r4", 4),
            answer("done"),
        ],
    )
    async with running_worker(client, registry(executed), task_queue):
        run = await DurableTools(client, task_queue).start("go", model=model)
        await wait_for(run, lambda s: "r1" in pending(s))
        await run.approve("r1", decider="alice", grant=GrantRequest())
        snapshot = await wait_for(run, lambda s: "p1" in pending(s))
        [grant] = snapshot.standing_grants
        # Only bob decides now: alice's grant no longer stands in for an approval.
        await run.set_policy(ApprovalPolicy(deciders=("bob",)), changed_by="security")
        await run.approve("p1", decider="bob")
        await wait_for(run, lambda s: "r3" in pending(s))
        # Anyone decides, but refunds need two people: no grant stands in for them.
        await run.set_policy(
            ApprovalPolicy(quorum=2, quorum_tools=("refund",)), changed_by="security"
        )
        await run.approve("r3", decider="bob")
        snapshot = await wait_for(run, lambda s: "r4" in pending(s))
        assert pending(snapshot)["r4"].approvals_required == 2
        await run.approve("r4", decider="bob")
        await run.approve("r4", decider="carol")
        await run.result()
        layers = {r.call_id: r.policy_layer for r in await run.timeline()}
        set_aside = await events(run, "grant.set_aside")
        await assert_not_wedged(run.handle)
    assert executed == [("refund", 1), ("refund", 2), ("pay", 5), ("refund", 3), ("refund", 4)]
    assert layers == {
        "r1": "person",
        "r2": f"grant:{grant.grant_id}",
        "p1": "person",
        "r3": "person",
        "r4": "person",
    }
    assert set_aside == [
        f"{grant.grant_id}: alice is not among the policy's deciders",
        f"{grant.grant_id}: refund needs 2 approvals; a grant is one person's",
    ]


@pytest.mark.parametrize("seconds", [1e12, math.inf, math.nan, -1.0, 0.0])
def test_every_duration_is_bounded_at_validation(seconds: float) -> None:
    for build in (
        lambda: ApprovalPolicy(timeout_seconds=seconds),
        lambda: ApprovalPolicy(
            timeout_seconds=60,
            on_timeout="escalate",
            escalate_to=("b",),
            escalation_timeout_seconds=seconds,
        ),
        lambda: GrantRequest(duration_seconds=seconds),
        lambda: AgentConfig(model_timeout_seconds=seconds),
    ):
        with pytest.raises(ValidationError):
            build()


async def test_huge_durations_sent_raw_are_refused_and_never_wedge_a_run(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    executed: list[Any] = []
    model = write_script(tmp_path, [refund("r1", 1), answer("done")])
    async with running_worker(client, registry(executed), task_queue):
        run = await DurableTools(client, task_queue).start("go", model=model)
        await wait_for(run, lambda s: "r1" in pending(s))
        # What a client without the project's types can send: plain JSON.
        with pytest.raises(WorkflowUpdateFailedError):
            await run.handle.execute_update(
                "set_policy", {"policy": {"timeout_seconds": 1e12}, "changed_by": "x"}
            )
        with pytest.raises(WorkflowUpdateFailedError):
            await run.handle.execute_update(
                "decide",
                {
                    "call_id": "r1",
                    "approve": True,
                    "grant": {"scope": "run", "duration_seconds": 1e12},
                },
            )
        await run.approve("r1", grant=GrantRequest(duration_seconds=3600))
        result = await run.result()
        await assert_not_wedged(run.handle, allowed=0)
    assert result.status == RunStatus.COMPLETED
    assert executed == [("refund", 1)]


async def test_a_person_may_not_decide_under_a_name_the_run_records_for_itself(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    executed: list[Any] = []
    model = write_script(tmp_path, [pay("p1", 5), answer("done")])
    policy = ApprovalPolicy(quorum=2)  # anyone may decide: the names are all they give
    async with running_worker(client, registry(executed), task_queue):
        run = await DurableTools(client, task_queue).start(
            "go", config=AgentConfig(model=model, approval=policy)
        )
        await wait_for(run, lambda s: "p1" in pending(s))
        for name in ("deadline", "Policy", "auto:judge", "AUTO:x via group:ops"):
            await rejected(run.approve("p1", decider=name), "may not decide")
        await run.approve("p1", decider="alice")
        await run.approve("p1", decider="bob")
        await run.result()
        [record] = await run.timeline()
        await assert_not_wedged(run.handle)
    assert record.decided_by == "alice+bob"
    assert executed == [("pay", 5)]


async def test_a_second_decision_is_told_who_decided(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    executed: list[Any] = []
    # The second call waits, so the run is still open when bob tries to decide r1 again.
    model = write_script(tmp_path, [refund("r1", 1), refund("r2", 2), answer("done")])
    async with running_worker(client, registry(executed), task_queue):
        run = await DurableTools(client, task_queue).start("go", model=model)
        await wait_for(run, lambda s: "r1" in pending(s))
        await run.approve("r1", decider="alice")
        await wait_for(run, lambda s: "r2" in pending(s))
        await rejected(run.approve("r1", decider="bob"), "was already approved by alice")
        await run.deny("r2", decider="bob")
        await run.result()
        await assert_not_wedged(run.handle)
    assert executed == [("refund", 1)]
