"""Attacks on a parent run's view of its sub-agents' waits, and on deciding a sub-agent's
call through the parent, on the real dev server.

A break is marked `xfail(strict=True, reason="BREAK: ...")`: the test says what should
hold and fails today. The attacks that hold are plain tests.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import Client

import cli_support
from cli_support import cli
from durable_tools import (
    AgentConfig,
    AgentRun,
    AlreadyDecided,
    AmbiguousRequest,
    ApprovalPolicy,
    DecisionError,
    DurableTools,
    ExecutionStrategy,
    Limits,
    NotADecider,
    NothingPending,
    RunStatus,
    StaleRequest,
    ToolRegistry,
    search_attributes as sa,
)
from durable_tools.cli._events import render_event
from durable_tools.client.render._text import render_subagent_wait
from durable_tools.events import _follow as follow_module
from durable_tools.protocol._wait_types import MAX_SUBAGENT_WAIT_DECIDERS
from durable_tools.workflows import RunEvent, SubagentWait
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

cli_env = cli_support.cli_env  # the fixture, by the name the tests ask for
SIGNAL = "subagent_waits"


class ChildWaiting(NamedTuple):
    """A parent run whose `researcher` sub-agent waits to publish."""

    run: AgentRun
    wait: SubagentWait
    """The child's wait, as the parent shows it."""
    child: AgentRun
    executed: list[str]
    """The texts `publish` published."""


@asynccontextmanager
async def child_waiting(
    client: Client, task_queue: str, tmp_path: Path, *, approval: ApprovalPolicy | None = None
) -> AsyncIterator[ChildWaiting]:
    """A worker, and a parent whose `researcher` (its approval policy `approval`, if
    given) waits to publish, for the block."""
    executed: list[str] = []
    registry = researcher_registry(tmp_path, executed, approval=approval)
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start(
            "delegate", model=delegating_model(tmp_path)
        )
        [wait] = (await wait_for(run, lambda s: bool(s.subagent_approvals))).subagent_approvals
        yield ChildWaiting(run, wait, AgentRun(client, f"{run.run_id}.r1"), executed)


async def refusal(decision: Awaitable[object]) -> DecisionError | None:
    """The `DecisionError` refusing `decision`; None when it was recorded."""
    try:
        await decision
    except DecisionError as refused:
        return refused
    return None


async def settled(run: AgentRun, *sent: dict[str, Any]) -> None:
    """Send the notices `sent` to `run` (as anyone may), then wait until every signal sent
    before has been handled: a marker notice (refused, from no sub-agent) is handled after
    them, and its refusal is in the events."""
    for each in sent:
        await run.handle.signal(SIGNAL, each)
    marker = f"marker-{uuid.uuid4().hex[:8]}"
    await run.handle.signal(
        SIGNAL, subagent_notice(marker, subagent_wait(marker, "m", "0" * 64), seq=0)
    )
    for _ in range(300):
        events = await run.events(subagents=False)
        if any(marker in (e.detail or "") for e in events):
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{run.run_id} never handled the marker notice")


async def details_of(run: AgentRun) -> str:
    metadata = await run.handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
    return metadata.current_details


async def test_a_forged_notice_cannot_relabel_the_childs_real_call(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with child_waiting(client, task_queue, tmp_path) as (run, real, child, *_):
        lie = subagent_wait(
            child.run_id,
            "pub",
            real.arguments_hash,
            tool="read_weather",
            summary="read the weather",
        )
        forged = subagent_notice(child.run_id, lie)
        await settled(run, forged)
        shown = (await run.status()).subagent_approvals
        details = await details_of(run)
        await run.cancel("test over")
    # The parent shows the child's call as the child tells it, never as a stranger does.
    assert shown == [real], shown
    assert "read the weather" not in details


async def test_a_forged_notice_dated_ahead_cannot_hide_the_childs_wait(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with child_waiting(client, task_queue, tmp_path) as (run, real, child, *_):
        ahead = datetime.now(UTC) + timedelta(minutes=4)
        forged = subagent_notice(child.run_id, seq=0, sent_at=ahead.isoformat())
        await settled(run, forged)
        snapshot = await run.status()
        await run.cancel("test over")
    assert snapshot.subagent_approvals == [real]
    assert snapshot.status == RunStatus.AWAITING_APPROVAL


async def test_a_forged_notice_cannot_inflate_the_parents_pending_count(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with child_waiting(client, task_queue, tmp_path) as (run, real, *_):
        await settled(
            run, subagent_notice(real.run_id, real.model_dump(mode="json"), more=1_000_000)
        )
        for _ in range(100):  # visibility is eventually consistent
            found = (await run.handle.describe()).typed_search_attributes
            if found.get(sa.PENDING_APPROVALS) != 1:
                break
            await asyncio.sleep(0.1)
        await run.cancel("test over")
    assert found.get(sa.PENDING_APPROVALS) == 1


async def test_a_notice_with_a_wrong_or_stolen_token_is_refused(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # A token of the right shape but not the child's, one with a Unicode look-alike
    # digit, another child's (a run that is not this child), and a huge one: each refused
    # (said in the events), and the child's own wait stands.
    async with child_waiting(client, task_queue, tmp_path) as (run, real, child, *_):
        token = await notice_token(client, child.run_id)
        lie = subagent_wait(child.run_id, "pub", real.arguments_hash, tool="read_weather")
        flipped = ("1" if token[0] == "0" else "0") + token[1:]
        tokens = [flipped, "\uff10" + token[1:], token.upper(), token * 1000, ""]
        await settled(run, *(subagent_notice(child.run_id, lie, token=t) for t in tokens))
        refused = [
            e.detail or ""
            for e in await run.events(subagents=False)
            if e.event == "subagent.notice_refused" and "token" in (e.detail or "")
        ]
        shown = (await run.status()).subagent_approvals
        await run.cancel("test over")
    assert shown == [real]
    assert len(refused) == len(tokens), refused
    assert all(token not in detail for detail in refused)  # the secret is never said


async def start_stranger(
    client: Client, task_queue: str, tmp_path: Path, run_id: str
) -> tuple[AgentRun, str]:
    """An unrelated top-level run (not started by the parent) whose id extends the
    child's, waiting to publish; its call id and arguments hash."""
    steps = [calls(("evil", "publish", {"text": "secrets"})), answer("done")]
    stranger = await DurableTools(client, task_queue).start(
        "unrelated", model=write_script(tmp_path, steps), run_id=run_id
    )
    [pending] = (await wait_for(stranger, lambda s: bool(s.pending_approvals))).pending_approvals
    return stranger, pending.arguments_hash


async def test_a_forged_notice_cannot_show_an_unrelated_runs_call_as_the_childs(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with child_waiting(client, task_queue, tmp_path) as (run, real, child, *_):
        stranger, digest = await start_stranger(client, task_queue, tmp_path, f"{child.run_id}.x")
        forged = subagent_notice(
            child.run_id,
            real.model_dump(mode="json"),
            subagent_wait(stranger.run_id, "evil", digest),
        )
        await settled(run, forged)
        shown = [w.run_id for w in (await run.status()).subagent_approvals]
        await run.cancel("test over")
        await stranger.cancel("test over")
    assert shown == [child.run_id]


async def test_deciding_through_the_parent_never_reaches_a_run_a_notice_names(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # Holds: whatever a notice says, deciding through the parent asks the parent's own
    # running sub-agent calls (its timeline), so an unrelated run a forged notice names is
    # out of reach, and a relabelled call is decided as the child has it.
    async with child_waiting(client, task_queue, tmp_path) as (run, real, child, executed):
        stranger, digest = await start_stranger(client, task_queue, tmp_path, f"{child.run_id}.x")
        forged = subagent_notice(  # with the child's token: taken, whatever it says
            child.run_id,
            subagent_wait(child.run_id, "pub", real.arguments_hash, tool="read_weather"),
            subagent_wait(stranger.run_id, "evil", digest),
            token=await notice_token(client, child.run_id),
        )
        await settled(run, forged)
        with pytest.raises(NothingPending):
            await run.decide_request("evil", True, arguments_hash=digest, decider="mallory")
        with pytest.raises(StaleRequest):  # the child's call id, the stranger's hash
            await run.decide_request("pub", True, arguments_hash=digest, decider="mallory")
        recorded = await run.decide_request(
            "pub", True, arguments_hash=real.arguments_hash, decider="alice"
        )
        assert recorded.run_id == child.run_id
        result = await run.result()
        still = await stranger.status()
        await stranger.cancel("test over")
        await assert_not_wedged(run.handle, allowed=0)
        history = await run.handle.fetch_history()
    await assert_replays(history)  # the forged notices replay as they were handled
    assert result.status == RunStatus.COMPLETED and executed == ["findings"]
    assert [a.call_id for a in still.pending_approvals] == ["evil"]


async def test_deciding_through_the_parent_applies_the_childs_deciders_and_quorum(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # Holds: the child's policy (named deciders, two distinct approvals), not the
    # parent's (anyone, one approval), governs a decision sent through the parent.
    child_policy = ApprovalPolicy(deciders=("carol", "dave"), quorum=2, quorum_tools=("publish",))
    async with child_waiting(client, task_queue, tmp_path, approval=child_policy) as (
        run,
        wait,
        child,
        executed,
    ):
        with pytest.raises(NotADecider):
            await run.decide_request(
                "pub", True, arguments_hash=wait.arguments_hash, decider="alice"
            )
        first = await run.decide_request(
            "pub", True, arguments_hash=wait.arguments_hash, decider="carol"
        )
        assert first.run_id == child.run_id
        assert executed == []  # one approval of two
        # The same person again, through the child this time: not a second approval.
        again = await refusal(
            child.decide_request("pub", True, arguments_hash=wait.arguments_hash, decider="carol")
        )
        assert again is not None and executed == []
        await run.decide_request("pub", True, arguments_hash=wait.arguments_hash, decider="dave")
        result = await run.result()
    assert result.status == RunStatus.COMPLETED and executed == ["findings"]


async def test_a_call_decided_in_the_child_is_refused_through_the_parent(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # Holds: the parent still shows the wait it was told of; a decision through it for a
    # call the child already decided is refused, and the tool runs once.
    async with child_waiting(client, task_queue, tmp_path) as (run, wait, child, executed):
        await child.decide_request("pub", True, arguments_hash=wait.arguments_hash, decider="a")
        refused = await refusal(
            run.decide_request("pub", False, arguments_hash=wait.arguments_hash, decider="b")
        )
        result = await run.result()
    assert refused is not None and "pub" in refused.message
    if isinstance(refused, AlreadyDecided):
        assert refused.decided_by == "a"
    assert result.status == RunStatus.COMPLETED and executed == ["findings"]


async def test_two_people_deciding_at_once_through_parent_and_child_decide_once(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with child_waiting(client, task_queue, tmp_path) as (run, wait, child, executed):
        digest = wait.arguments_hash
        outcomes = await asyncio.gather(
            run.decide_request("pub", True, arguments_hash=digest, decider="alice"),
            child.decide_request("pub", False, arguments_hash=digest, decider="bob"),
            return_exceptions=True,
        )
        result = await run.result()
        timeline = await child.timeline()
    recorded = [o for o in outcomes if not isinstance(o, BaseException)]
    refused = [o for o in outcomes if isinstance(o, BaseException)]
    assert len(recorded) == 1 and len(refused) == 1, outcomes
    assert isinstance(refused[0], DecisionError)
    assert result.status == RunStatus.COMPLETED
    decided_by = [r.decided_by for r in timeline if r.call_id == "pub"]
    assert decided_by == [recorded[0].decider]
    assert executed == (["findings"] if recorded[0].decider == "alice" else [])


async def test_many_children_waiting_stay_listed_counted_and_decidable_through_the_parent(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # Load: 24 sub-agents wait at once (24 notices, then one more each as each is
    # decided); the parent lists and counts each, every one is decided through the
    # parent, and the merged events stay bounded (MAX_SUBAGENTS_READ children read) and
    # in time order.
    children = 24
    executed: list[str] = []
    registry = researcher_registry(tmp_path, executed)
    model = write_script(
        tmp_path,
        [
            calls(*[(f"r{i}", "researcher", {"task": str(i)}) for i in range(children)]),
            answer("all done"),
        ],
    )
    config = AgentConfig(
        model=model,
        strategy=ExecutionStrategy(mode="parallel", concurrency=children),
        limits=Limits(max_tool_calls_per_turn=children),
        events_kept=200,
    )
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("fan out", config=config)
        snapshot = await wait_for(run, lambda s: len(s.subagent_approvals) == children, timeout=120)
        waits = {w.run_id: w for w in snapshot.subagent_approvals}
        assert set(waits) == {f"{run.run_id}.r{i}" for i in range(children)}
        merged = await run.events()
        assert [e.at for e in merged] == sorted(e.at for e in merged)
        assert len({e.subagent_run for e in merged if e.subagent_run}) <= 16
        # Every child's call is "pub" with the same arguments: through the parent the
        # decision is ambiguous and refused (naming every run), so each is decided in its
        # own run.
        some = next(iter(waits.values()))
        with pytest.raises(AmbiguousRequest) as ambiguous:
            await run.decide_request(
                "pub", True, arguments_hash=some.arguments_hash, decider="alice"
            )
        assert set(ambiguous.value.run_ids) == set(waits)
        for child_id, wait in waits.items():
            await AgentRun(client, child_id).decide_request(
                "pub", True, arguments_hash=wait.arguments_hash, decider="alice"
            )
        result = await run.result()
        history = await run.handle.fetch_history()
        await assert_not_wedged(run.handle, allowed=0)
    assert result.status == RunStatus.COMPLETED and len(executed) == children
    # The parent's history grows by a bounded number of notices per child's approval
    # (one when it opens, one when it closes), not with the number of its sub-agents.
    signals = [
        e for e in history.events if e.HasField("workflow_execution_signaled_event_attributes")
    ]
    assert len(signals) <= 2 * children, len(signals)


HOSTILE = "\u202eevil\u200b\x1b[2J<img src=x onerror=alert(1)>`](http://x)\n\n# ok"


async def test_a_notice_cannot_put_bidi_or_zero_width_characters_in_the_parents_details(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with child_waiting(client, task_queue, tmp_path) as (run, real, child, *_):
        hostile = subagent_wait(
            child.run_id, "pub", real.arguments_hash, tool="publish\u202e", summary=HOSTILE
        )
        # With the child's token (a sub-agent's own text, or a reader of its input).
        forged = subagent_notice(
            child.run_id, hostile, token=await notice_token(client, child.run_id)
        )
        await settled(run, forged)
        details = await details_of(run)
        await run.cancel("test over")
    assert "sub-agent run" in details
    assert not any(c in details for c in "\u202e\u200b\x1b"), repr(details)


def hostile_wait() -> SubagentWait:
    """A wait as a forged notice may carry it (the notice checks no characters)."""
    return SubagentWait(
        run_id="p.r1.\x1b]8;;http://x\x07",
        call_id="pub\u202e",
        tool="publish\x1b[2J",
        summary=HOSTILE,
        arguments_hash="a" * 64,
        requested_at=datetime.now(UTC),
    )


def test_the_cli_prints_a_hostile_wait_terminal_safe() -> None:
    # Holds: escape codes, bidi overrides and line breaks print as visible escapes, one
    # line per field.
    out = render_subagent_wait("parent", hostile_wait())
    assert not any(c in out for c in "\u202e\x1b\x07")
    assert len(out.splitlines()) == 5  # the newlines in the summary did not add lines


def test_the_cli_shows_zero_width_characters_of_a_wait() -> None:
    wait = hostile_wait().model_copy(update={"call_id": "pub\u200b", "summary": "pay\ufeff 1"})
    out = render_subagent_wait("parent", wait)
    assert not any(c in out for c in "\u200b\u200c\u200d\u2060\ufeff"), repr(out)


async def test_a_child_ended_under_the_parent_is_no_longer_shown_nor_decided(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # Holds: the child is terminated while the parent shows its wait: the parent drops
    # the wait when the call ends, and a decision sent through the parent with what it
    # showed is refused (nothing runs).
    async with child_waiting(client, task_queue, tmp_path) as (run, wait, _, executed):
        await client.get_workflow_handle(wait.run_id).terminate("gone")
        result = await run.result()
        refused = await refusal(
            run.decide_request("pub", True, arguments_hash=wait.arguments_hash, decider="a")
        )
        after = await run.status()
    assert after.subagent_approvals == []
    assert refused is not None and refused.run_id == run.run_id
    assert result.status == RunStatus.COMPLETED and executed == []


class Collected:
    """A sink that keeps what it is given."""

    def __init__(self) -> None:
        self.events: list[tuple[str, RunEvent]] = []

    def emit(self, run_id: str, event: RunEvent) -> None:
        self.events.append((run_id, event))

    def close(self) -> None:
        """Nothing to release."""


async def test_following_a_tree_of_sub_agents_stays_within_its_bound(
    client: Client, task_queue: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The documented bound ("Sub-agent streams one follow reads at most (its whole
    # tree)") lowered to 2 for a tree of 2 leads with 2 leaves each (6 sub-agents).
    monkeypatch.setattr(follow_module, "MAX_SUBAGENTS_FOLLOWED", 2)
    registry = ToolRegistry()
    leaf = write_script(tmp_path, [answer("leaf done")])
    registry.subagent(AgentConfig(name="leaf", model=leaf), name="leaf", description="Leaf.")
    lead_steps = [calls(("l1", "leaf", {"task": "a"}), ("l2", "leaf", {"task": "b"}))]
    lead = write_script(tmp_path, [*lead_steps, answer("lead done")])
    registry.subagent(
        AgentConfig(name="lead", model=lead, strategy=ExecutionStrategy(mode="parallel")),
        name="lead",
        description="Leads.",
    )
    root = write_script(
        tmp_path,
        [calls(("d1", "lead", {"task": "x"}), ("d2", "lead", {"task": "y"})), answer("ok")],
    )
    config = AgentConfig(
        model=root, max_subagent_depth=2, strategy=ExecutionStrategy(mode="parallel")
    )
    async with running_worker(client, registry, task_queue):
        run = await DurableTools(client, task_queue).start("tree", config=config)
        result = await run.result()
        sink = Collected()
        followed = await run.follow_events(sink)
    assert result.status == RunStatus.COMPLETED
    assert len(followed.subagents) <= 2, followed.subagents


async def test_the_printed_command_for_a_childs_named_deciders_says_who_decides(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    policy = ApprovalPolicy(deciders=("carol",))
    async with child_waiting(client, task_queue, tmp_path, approval=policy) as (run, wait, *_):
        [(_, own)] = await run.subagent_approvals()
        await run.cancel("test over")
    assert list(own.deciders) == ["carol"]
    printed = render_subagent_wait(run.run_id, wait)  # what `durable-tools pending` prints
    assert "--as NAME" in printed, printed


async def test_a_childs_deciders_reach_the_parent_bounded_and_never_as_anyone(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # Named deciders travel with the wait; a list past the bound is not told (None:
    # shown to nobody), never cut to an empty list (which would mean anyone).
    for deciders, told in (
        (("carol", "group:ops"), ["carol", "group:ops"]),
        (tuple(f"d{i}" for i in range(MAX_SUBAGENT_WAIT_DECIDERS + 1)), None),
    ):
        policy = ApprovalPolicy(deciders=deciders)
        async with child_waiting(client, task_queue, tmp_path, approval=policy) as (run, wait, *_):
            await run.cancel("test over")
        assert wait.deciders == told, wait.deciders


async def test_a_notices_hostile_text_prints_terminal_safe_in_the_events(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # Holds: the `subagent.waiting` / `subagent.notice_refused` events a hostile notice
    # causes carry its text, and `durable-tools events` prints them as visible escapes.
    async with child_waiting(client, task_queue, tmp_path) as (run, real, child, *_):
        tool = "publish\x1b[2J\u202e"
        accepted = subagent_wait(child.run_id, "pub", real.arguments_hash, tool=tool)
        stranger = "x\x1b]8;;http://evil\x07\u202e"
        refused = subagent_notice(stranger, subagent_wait(stranger, "c", "0" * 64), seq=0)
        token = await notice_token(client, child.run_id)
        await settled(run, subagent_notice(child.run_id, accepted, token=token), refused)
        events = [
            e
            for e in await run.events(subagents=False)
            if e.event in ("subagent.waiting", "subagent.notice_refused")
        ]
        await run.cancel("test over")
    assert any("\x1b" in (e.detail or "") for e in events)  # the raw text is kept
    printed = "\n".join(render_event(e) for e in events)
    assert not any(c in printed for c in "\x1b\x07\u202e"), printed


async def test_show_prints_the_childs_own_call_over_a_forged_label(
    client: Client, task_queue: str, tmp_path: Path, cli_env: str, capsys: Any
) -> None:
    # Holds for `show` (it asks the sub-agent that answers and prints its own request in
    # place of what the parent was told); `pending` prints the notice as told (the break
    # above).
    async with child_waiting(client, task_queue, tmp_path) as (run, real, *_):
        lie = subagent_wait(real.run_id, "pub", real.arguments_hash, summary="read the weather")
        await settled(
            run, subagent_notice(real.run_id, lie, token=await notice_token(client, real.run_id))
        )
        code, out, err = await cli(capsys, "show", run.run_id)
        await run.cancel("test over")
    assert code == 0, err
    assert "publish «findings»" in out and "read the weather" not in out
