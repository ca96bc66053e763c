"""Attacks on the approval path as main now shapes it (one argument check, `decide`'s ask
verdict as the request, grants and safety rules in the gate), on a real dev server with a
scripted model: what a decision binds, worker-written summaries, and a tool that changes
under a run after a person approved it or granted it."""

from __future__ import annotations

import asyncio
import json
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowUpdateFailedError

from durable_tools import (
    AgentConfig,
    ApprovalPolicy,
    DurableTools,
    GrantRequest,
    Identity,
    RunStatus,
    ToolRegistry,
)
from durable_tools.policy._decide import arguments_hash
from durable_tools.tools._validation import schema_digest
from durable_tools.worker import GrantStore
from durable_tools.workflows import AgentWorkflow, ApprovalDecision, RunSnapshot, SafetyRule
from durable_tools.workflows.catalog._run_catalog import CATALOG_RECHECK
from support import (
    answer,
    assert_not_wedged,
    assert_replays,
    calls,
    event_attributes,
    running_worker,
    wait_for,
    write_script,
)


def pending_ids(snapshot: RunSnapshot) -> set[str]:
    return {p.call_id for p in snapshot.pending_approvals}


def waiting_on(call_id: str, **shown: Any) -> Any:
    """A `wait_for` predicate: `call_id` waits for a person with these arguments shown."""

    def check(snapshot: RunSnapshot) -> bool:
        return any(
            p.call_id == call_id and all(p.arguments.get(k) == v for k, v in shown.items())
            for p in snapshot.pending_approvals
        )

    return check


async def refused(decision: Any, words: str) -> None:
    with pytest.raises(WorkflowUpdateFailedError) as error:
        await decision
    assert words in str(error.value.cause)


async def test_a_decision_binds_to_exactly_the_arguments_shown(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    executed: list[Any] = []
    registry = ToolRegistry()

    @registry.tool(approval=True, idempotent=True)
    def refund(order_id: str, amount_cents: int) -> str:
        """Refund an order."""
        executed.append((order_id, amount_cents))
        return "refunded"

    small = {"order_id": "A1", "amount_cents": 500}
    large = {"order_id": "A1", "amount_cents": 500_000}
    # The model writes the first amount as a float: the person sees (and binds) 500.
    model = write_script(
        tmp_path,
        [
            calls(("r", "refund", {"order_id": "A1", "amount_cents": 500.0})),
            calls(("r", "refund", large)),  # the same call id, other arguments
            answer("done"),
        ],
    )
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("refund", model=model)
        snapshot = await wait_for(run, waiting_on("r", amount_cents=500))
        shown = snapshot.pending_approvals[0]
        assert shown.arguments == small
        assert shown.arguments_hash == arguments_hash(small)
        nfd = unicodedata.normalize("NFD", "A\u0301")
        look_alikes = [
            {"order_id": "A1", "amount_cents": 500.0},
            {"order_id": "A1", "amount_cents": True},
            {"order_id": "A1", "amount_cents": "500"},
            {"order_id": "A1\u200b", "amount_cents": 500},
            {"order_id": "\u0410" + "1", "amount_cents": 500},  # Cyrillic A
            {"order_id": nfd, "amount_cents": 500},
            {"Order_id": "A1", "amount_cents": 500},
            large,  # the next call's arguments, which a model could announce
        ]
        for other in look_alikes:
            await refused(
                run.approve("r", decider="alice", arguments_hash=arguments_hash(other)),
                "hash does not match",
            )
        await refused(
            run.approve("r", decider="alice", arguments_hash=shown.arguments_hash.upper()),
            "hash does not match",
        )
        assert executed == []
        await run.approve("r", decider="alice", arguments_hash=shown.arguments_hash)

        # The id comes back with other arguments: the first decision does not carry over,
        # replayed with its hash or without one.
        again = await wait_for(run, waiting_on("r", amount_cents=500_000))
        assert executed == [("A1", 500)]
        await refused(
            run.approve("r", decider="alice", arguments_hash=shown.arguments_hash),
            "hash does not match",
        )
        await refused(run.approve("r", decider="alice"), "more than one call")
        await run.deny(
            "r", decider="alice", arguments_hash=again.pending_approvals[0].arguments_hash
        )
        result = await run.result()
        history = await run.handle.fetch_history()
        await assert_not_wedged(run.handle, allowed=0)
        await assert_replays(history)
    assert result.status == RunStatus.COMPLETED
    assert executed == [("A1", 500)]
    # The approved call went to the worker bound to the schema alice saw, which is the
    # tool's own: the worker checks it again (a digest that never matched would skip that).
    inputs = [
        json.loads(attributes.input.payloads[0].data)
        for attributes in event_attributes(history, "activity_task_scheduled_event_attributes")
        if attributes.input.payloads
    ]
    bound = [i["approved_schema"] for i in inputs if isinstance(i, dict) and "approved_schema" in i]
    assert bound == [schema_digest(registry.get("refund").spec.input_schema)]


async def test_worker_summaries_that_raise_flood_or_mark_up_still_ask_a_person(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    executed: list[str] = []

    def summary(args: dict[str, Any]) -> Any:
        mode = args["mode"]
        if mode == "raise":
            raise RuntimeError("summary broke: token=sk-live-123")
        if mode == "flood":
            return "<script>alert(1)</script>\u202e\n" + "\u00bbx\u00ab" * 100_000
        if mode == "number":
            return 12345
        return f"plain {mode}"

    registry = ToolRegistry()

    @registry.tool(approval=True, idempotent=True, approval_summary=summary)
    def act(mode: str) -> str:
        """Do something."""
        executed.append(mode)
        return "done"

    modes = ["raise", "flood", "number", "ok"]
    model = write_script(
        tmp_path,
        [calls(*[(f"c{i}", "act", {"mode": mode}) for i, mode in enumerate(modes)]), answer("x")],
    )
    summaries: dict[str, str | None] = {}
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("act", model=model)
        for number, mode in enumerate(modes):
            call_id = f"c{number}"
            snapshot = await wait_for(run, lambda s, c=call_id: c in pending_ids(s))
            (shown,) = [p for p in snapshot.pending_approvals if p.call_id == call_id]
            summaries[mode] = shown.summary
            await run.approve(call_id, decider="alice", arguments_hash=shown.arguments_hash)
        result = await run.result()
        await assert_not_wedged(run.handle, allowed=0)
        await assert_replays(await run.handle.fetch_history())
    assert result.status == RunStatus.COMPLETED
    assert sorted(executed) == sorted(modes)  # each approved call ran once
    assert summaries["ok"] == "plain ok"
    assert summaries["raise"] is None or "sk-live" not in summaries["raise"]
    flood = summaries["flood"] or ""
    assert len(flood) <= 300 and "\n" not in flood and "\u202e" not in flood
    assert "\u00ab" not in flood and "\u00bb" not in flood  # no forged value marks
    assert summaries["number"] in (None, "12345")


QUERY = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
TO_ONLY = {
    "type": "object",
    "properties": {"to": {"type": "string"}},
    "required": ["to"],
    "additionalProperties": False,
}
TO_AND_BCC = {
    "type": "object",
    "properties": {"to": {"type": "string"}, "bcc": {"type": "string"}},
    "required": ["to"],
    "additionalProperties": False,
}
ORDER = {"type": "object", "properties": {"order_id": {"type": "string"}}}
SHELL_DENIED = ApprovalPolicy(safety_rules=(SafetyRule(action="deny", shell=True),))
SHELL_ASKS = ApprovalPolicy(safety_rules=(SafetyRule(action="ask", shell=True),))


def register(
    registry: ToolRegistry,
    seen: list[dict[str, Any]],
    name: str = "query",
    schema: dict[str, Any] = QUERY,
    **options: Any,
) -> None:
    """Register (or with `replace=True`, replace) a tool that records its arguments."""
    registry.register_schema(
        lambda arguments, ctx: seen.append(dict(arguments)) or "ok",
        input_schema=schema,
        name=name,
        idempotent=True,
        **options,
    )


def with_hold(registry: ToolRegistry, tmp_path: Path, first: Any, *later: Any) -> str:
    """A script: `first`, then a `hold` call waiting for a person, then `later` in one turn;
    registers the `hold` tool."""

    @registry.tool(approval=True, idempotent=True)
    def hold() -> str:
        """Wait for a person."""
        return "held"

    return write_script(
        tmp_path, [calls(first), calls(("hold", "hold", {})), calls(*later), answer("done")]
    )


async def swap_while_waiting(run: Any, swap: Any, hold_id: str = "hold") -> None:
    """Change the worker's tools with `swap()` while the run waits on `hold_id`, let the run
    see the change, then approve the held call."""
    snapshot = await wait_for(run, lambda s: hold_id in pending_ids(s))
    swap()
    await asyncio.sleep(CATALOG_RECHECK.total_seconds() + 0.2)
    (held,) = [p for p in snapshot.pending_approvals if p.call_id == hold_id]
    await run.approve(hold_id, decider="alice", arguments_hash=held.arguments_hash)


async def approve_with_grant(run: Any, call_id: str) -> None:
    """Approve `call_id` as alice and ask to stop asking for its tool in this run."""
    snapshot = await wait_for(run, lambda s: call_id in pending_ids(s))
    (shown,) = [p for p in snapshot.pending_approvals if p.call_id == call_id]
    await run.approve(
        call_id, decider="alice", arguments_hash=shown.arguments_hash, grant=GrantRequest()
    )


async def deny_if_asked(run: Any, call_id: str) -> None:
    """Deny `call_id` if it comes to wait for a person before the run completes."""
    seen = await wait_for(
        run, lambda s: call_id in pending_ids(s) or s.status == RunStatus.COMPLETED
    )
    if call_id in pending_ids(seen):
        await run.deny(call_id, decider="alice")


async def test_a_grant_does_not_cover_a_tool_replaced_with_another_schema(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    sent: list[dict[str, Any]] = []
    registry = ToolRegistry()
    register(registry, sent, "send", TO_ONLY, approval=True)
    model = with_hold(
        registry,
        tmp_path,
        ("s1", "send", {"to": "bob"}),
        ("s2", "send", {"to": "bob", "bcc": "mallory"}),
    )
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("send", model=model)
        await approve_with_grant(run, "s1")  # "stop asking" for send, as alice saw it
        await swap_while_waiting(
            run, lambda: register(registry, sent, "send", TO_AND_BCC, approval=True, replace=True)
        )
        await deny_if_asked(run, "s2")
        await run.result()
        records = {r.call_id: r for r in await run.timeline()}
    assert records["s2"].status != "invalid"  # the run saw the new schema
    assert sent == [{"to": "bob"}]  # the bcc call did not run on the old grant
    assert records["s2"].policy_layer == "person"


async def test_a_tool_that_starts_running_shell_after_the_run_started_meets_the_deny_rule(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    ran: list[dict[str, Any]] = []
    registry = ToolRegistry()
    register(registry, ran)
    model = with_hold(
        registry, tmp_path, ("q1", "query", {"q": "before"}), ("q2", "query", {"q": "after"})
    )
    async with running_worker(client, registry, task_queue):
        config = AgentConfig(model=model, approval=SHELL_DENIED)
        run = await DurableTools(client, task_queue).start("query", config=config)
        await swap_while_waiting(run, lambda: register(registry, ran, shell=True, replace=True))
        result = await run.result()
        records = {r.call_id: r for r in await run.timeline()}
        await assert_not_wedged(run.handle, allowed=0)
    assert result.status == RunStatus.COMPLETED
    assert ran == [{"q": "before"}]
    assert (records["q2"].status, records["q2"].policy_layer) == ("denied", "safety_rule")


async def test_a_waiting_call_whose_tool_turns_shell_is_not_run_on_its_approval(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    ran: list[dict[str, Any]] = []
    registry = ToolRegistry()
    register(registry, ran, approval=True)
    model = write_script(tmp_path, [calls(("q1", "query", {"q": "x"})), answer("done")])
    async with running_worker(client, registry, task_queue):
        config = AgentConfig(model=model, approval=SHELL_DENIED)
        run = await DurableTools(client, task_queue).start("query", config=config)
        # Same schema: the approval's schema binding still matches.
        await swap_while_waiting(
            run,
            lambda: register(registry, ran, approval=True, shell=True, replace=True),
            hold_id="q1",
        )
        result = await run.result()
        records = {r.call_id: r for r in await run.timeline()}
    assert result.status == RunStatus.COMPLETED
    # The policy denies shell tools: what runs now is one, whatever alice approved.
    assert ran == [], records["q1"]
    # Refused once, not retried, and the model is told why and what to do.
    failed = records["q1"]
    assert (failed.status, failed.error_kind, failed.attempts) == ("failed", "Denied", 1)
    assert failed.result is not None and "changed since this call was approved" in failed.result
    assert "ask again" in failed.result


async def test_a_grant_given_for_a_plain_tool_does_not_cover_it_once_it_runs_shell(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    ran: list[dict[str, Any]] = []
    registry = ToolRegistry()
    register(registry, ran, approval=True)
    model = with_hold(
        registry, tmp_path, ("q1", "query", {"q": "plain"}), ("q2", "query", {"q": "shell"})
    )
    async with running_worker(client, registry, task_queue):
        config = AgentConfig(model=model, approval=SHELL_ASKS)
        run = await DurableTools(client, task_queue).start("query", config=config)
        await approve_with_grant(run, "q1")
        await swap_while_waiting(
            run, lambda: register(registry, ran, approval=True, shell=True, replace=True)
        )
        await deny_if_asked(run, "q2")
        await run.result()
        records = {r.call_id: r for r in await run.timeline()}
    assert records["q1"].status == "completed"
    assert ran == [{"q": "plain"}], records["q2"]  # the shell call was asked, not granted


async def test_a_grant_never_outranks_a_deny_set_after_it(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    ran: list[dict[str, Any]] = []
    registry = ToolRegistry()
    register(registry, ran, approval=True)
    model = with_hold(
        registry,
        tmp_path,
        ("q1", "query", {"q": "one"}),
        ("q2", "query", {"q": "two"}),
        ("q3", "query", {"q": "three"}),
    )
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("query", model=model)
        await approve_with_grant(run, "q1")
        await wait_for(run, lambda s: "hold" in pending_ids(s))
        await run.set_policy(ApprovalPolicy(deny_tools=("query",)), changed_by="security")
        await swap_while_waiting(run, lambda: None)
        result = await run.result()
        records = {r.call_id: r for r in await run.timeline()}
        await assert_not_wedged(run.handle, allowed=0)
    assert result.status == RunStatus.COMPLETED
    assert ran == [{"q": "one"}]
    for call_id in ("q2", "q3"):
        assert (records[call_id].status, records[call_id].policy_layer) == ("denied", "deny_list")


async def test_a_replayed_decision_signal_never_answers_a_reissued_call(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    executed: list[dict[str, Any]] = []
    registry = ToolRegistry()
    register(registry, executed, "wire", TO_ONLY, approval=True)

    model = write_script(
        tmp_path,
        [calls(("w", "wire", {"to": "bob"})), calls(("w", "wire", {"to": "mallory"})), answer("x")],
    )
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("wire", model=model)
        first = await wait_for(run, waiting_on("w", to="bob"))
        without_hash = ApprovalDecision(call_id="w", approve=True, decider="alice")
        with_hash = ApprovalDecision(
            call_id="w",
            approve=True,
            decider="alice",
            arguments_hash=first.pending_approvals[0].arguments_hash,
        )
        await run.handle.signal(AgentWorkflow.decision_signal, without_hash)
        second = await wait_for(run, waiting_on("w", to="mallory"))
        # The same signals delivered again (a retrying client, a replay by someone else).
        for decision in (without_hash, with_hash, without_hash):
            await run.handle.signal(AgentWorkflow.decision_signal, decision)
        for _ in range(150):  # each signal is handled (and refused) in its own time
            events = await run.events()
            if sum(e.event == "approval.rejected" for e in events) >= 3:
                break
            await asyncio.sleep(0.1)
        assert executed == [{"to": "bob"}]
        assert "w" in pending_ids(await run.status())
        await run.deny(
            "w", decider="alice", arguments_hash=second.pending_approvals[0].arguments_hash
        )
        assert (await run.result()).status == RunStatus.COMPLETED
        rejected = [e for e in await run.events() if e.event == "approval.rejected"]
    assert executed == [{"to": "bob"}]
    assert len(rejected) == 3


async def test_an_identity_grant_never_covers_an_identity_that_only_looks_the_same(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    executed: list[dict[str, Any]] = []
    registry = ToolRegistry()
    register(registry, executed, "refund", ORDER, approval=True)

    policy = ApprovalPolicy(identity_grants=True)

    def config(order_id: str, name: str = "agent") -> AgentConfig:
        model = write_script(
            tmp_path, [calls((order_id, "refund", {"order_id": order_id})), answer("ok")]
        )
        return AgentConfig(name=name, model=model, approval=policy)

    alice = Identity(tenant="acme", user="alice")
    look_alikes = {
        "upper-tenant": (Identity(tenant="ACME", user="alice"), "agent"),
        "upper-user": (Identity(tenant="acme", user="Alice"), "agent"),
        "zero-width": (Identity(tenant="acme", user="alice\u200b"), "agent"),
        "fullwidth": (Identity(tenant="acme", user="\uff41lice"), "agent"),
        "cyrillic": (Identity(tenant="acme", user="\u0430lice"), "agent"),
        "in-tenant": (Identity(tenant="acme;user=alice"), "agent"),
        "user-only": (Identity(user="alice"), "agent"),
        "other-agent": (alice, "other"),
    }
    async with running_worker(
        client, registry, task_queue, grant_store=GrantStore(tmp_path / "grants.json")
    ):
        dt = DurableTools(client, task_queue)
        first = await dt.start("grant", config=config("granted"), identity=alice)
        snapshot = await wait_for(first, lambda s: "granted" in pending_ids(s))
        await first.approve(
            "granted",
            decider="boss",
            arguments_hash=snapshot.pending_approvals[0].arguments_hash,
            grant=GrantRequest(scope="identity", duration_seconds=3600),
        )
        await first.result()
        covered = await dt.start("covered", config=config("covered"), identity=alice)
        assert (await covered.result()).status == RunStatus.COMPLETED
        runs = {
            label: await dt.start(label, config=config(label, name), identity=identity)
            for label, (identity, name) in look_alikes.items()
        }
        for label, run in runs.items():
            await wait_for(run, lambda s, c=label: c in pending_ids(s), timeout=60)
            await run.deny(label, decider="boss")
            assert (await run.result()).status == RunStatus.COMPLETED
    assert executed == [
        {"order_id": "granted"},
        {"order_id": "covered"},
    ]  # every look-alike was asked, none ran
