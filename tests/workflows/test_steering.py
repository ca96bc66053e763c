"""Steering inside a turn, on a real dev server: skip the calls not yet started, withdraw
pending approvals, deliver the instruction before the next model turn."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowUpdateFailedError

import cli_support
from cli_support import cli
from durable_tools import (
    AgentConfig,
    AgentRun,
    DurableTools,
    ExecutionStrategy,
    RunEvent,
    RunStatus,
    ToolRegistry,
)
from durable_tools.models import aclose_shared_clients
from durable_tools.protocol._limits import MAX_STEER_CHARS
from durable_tools.protocol._types import Steer
from durable_tools.workflows import ApprovalDecision
from fake_openai import FakeOpenAIServer, chat_completion, tool_call
from support import answer, assert_not_wedged, calls, running_worker, wait_for, write_script

cli_env = cli_support.cli_env  # the fixture, by the name the tests ask for

SKIPPED = "skipped: the user steered: "


class Blocker:
    """Tools for the tests: `step` records its argument; step "hold" waits for `release`."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.holding = asyncio.Event()
        self.release = asyncio.Event()
        self.registry = ToolRegistry()

        @self.registry.tool(read_only=True)
        async def step(name: str) -> str:
            """Do one step of the work."""
            self.ran.append(name)
            if name == "hold":
                self.holding.set()
                await self.release.wait()
            return f"{name} done"

        @self.registry.tool(approval=True, idempotent=True)
        def pay(amount_cents: int) -> str:
            """Pay an amount (needs approval)."""
            self.ran.append(f"pay {amount_cents}")
            return f"paid {amount_cents}"


async def events_named(
    run: AgentRun, name: str, count: int = 1, timeout: float = 15
) -> list[RunEvent]:
    """Poll the run's events until `count` named `name` are there (signals land async)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        found = [e for e in await run.events() if e.event == name]
        if len(found) >= count:
            return found
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{run.run_id}: {len(found)} {name!r} events, wanted {count}")
        await asyncio.sleep(0.05)


def assert_every_call_answered(messages: list[dict[str, Any]]) -> None:
    """Each assistant tool call is answered by one tool message before the next turn."""
    for index, message in enumerate(messages):
        if message["role"] != "assistant" or not message.get("tool_calls"):
            continue
        wanted = [c["id"] for c in message["tool_calls"]]
        answered = []
        for later in messages[index + 1 :]:
            if later["role"] != "tool":
                break
            answered.append(later["tool_call_id"])
        assert answered == wanted, f"tool calls {wanted} answered by {answered}"


@pytest.fixture
async def openai_server(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-steering")
        yield server
        await aclose_shared_clients()


async def test_a_skip_steer_skips_the_sequential_calls_not_yet_started(
    client: Client, task_queue: str, openai_server: FakeOpenAIServer
) -> None:
    tools = Blocker()
    three = [
        tool_call(f"c{i}", "step", json.dumps({"name": name}))
        for i, name in enumerate(["hold", "second", "third"], 1)
    ]
    openai_server.add(chat_completion(tool_calls=three), chat_completion(content="summarised"))
    config = AgentConfig(model="openai:fake-model")
    async with running_worker(client, tools.registry, task_queue):
        run = await DurableTools(client, task_queue).start("do three steps", config=config)
        await asyncio.wait_for(tools.holding.wait(), 15)
        await run.steer("stop and summarise instead", skip_remaining=True)
        steered = await events_named(run, "run.steered")
        tools.release.set()
        result = await run.result()
        timeline = await run.timeline()
        skipped = await events_named(run, "tool.skipped", count=2)
        await assert_not_wedged(run.handle, allowed=0)
    assert result.status == RunStatus.COMPLETED and result.final_answer == "summarised"
    assert tools.ran == ["hold"]  # calls 2 and 3 never ran
    assert {r.call_id: r.status for r in timeline} == {
        "c1": "completed",
        "c2": "skipped",
        "c3": "skipped",
    }
    assert [e.call_id for e in skipped] == ["c2", "c3"]
    assert steered[0].detail == "[mid-turn, skip remaining calls] stop and summarise instead"
    # What the model got on its next turn, in the provider's wire format: every call id
    # answered (the running call's real result, synthetic results for the skipped ones),
    # then the instruction.
    messages = openai_server.requests[1].json["messages"]
    assert_every_call_answered(messages)
    tool_results = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    assert "hold done" in tool_results["c1"]
    assert tool_results["c2"] == tool_results["c3"] == SKIPPED + "stop and summarise instead"
    assert messages[-1] == {"role": "user", "content": "stop and summarise instead"}


async def test_a_skip_steer_during_the_first_batch_skips_the_second(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    tools = Blocker()
    model = write_script(
        tmp_path,
        [
            calls(
                ("a1", "step", {"name": "hold"}),
                ("a2", "step", {"name": "quick"}),
                ("b1", "step", {"name": "later-1"}),
                ("b2", "step", {"name": "later-2"}),
            ),
            answer("changed course"),
        ],
    )
    config = AgentConfig(model=model, strategy=ExecutionStrategy(mode="batched", batch_size=2))
    async with running_worker(client, tools.registry, task_queue):
        run = await DurableTools(client, task_queue).start("four steps", config=config)
        await asyncio.wait_for(tools.holding.wait(), 15)
        await run.steer("skip the rest", skip_remaining=True)
        await events_named(run, "run.steered")
        tools.release.set()
        result = await run.result()
        timeline = await run.timeline()
        conversation = await run.conversation()
        await assert_not_wedged(run.handle, allowed=0)
    assert result.status == RunStatus.COMPLETED
    assert sorted(tools.ran) == ["hold", "quick"]  # batch 1 ran whole; batch 2 never started
    assert {r.call_id: r.status for r in timeline} == {
        "a1": "completed",
        "a2": "completed",
        "b1": "skipped",
        "b2": "skipped",
    }
    tool_messages = [(m.tool_call_id, m.content) for m in conversation if m.role == "tool"]
    assert [call_id for call_id, _ in tool_messages] == ["a1", "a2", "b1", "b2"]
    assert tool_messages[2][1] == tool_messages[3][1] == SKIPPED + "skip the rest"
    assert [(m.role, m.content) for m in conversation[-2:]] == [
        ("user", "skip the rest"),
        ("assistant", "changed course"),
    ]


async def test_a_skip_steer_withdraws_a_pending_approval_through_the_cli(
    client: Client, task_queue: str, tmp_path: Path, cli_env: str, capsys: Any
) -> None:
    tools = Blocker()
    model = write_script(
        tmp_path,
        [
            calls(("p1", "pay", {"amount_cents": 500}), ("s1", "step", {"name": "after"})),
            calls(("p2", "pay", {"amount_cents": 7})),
            answer("paid 7 instead"),
        ],
    )
    async with running_worker(client, tools.registry, task_queue):
        run = await DurableTools(client, task_queue).start("pay", config=AgentConfig(model=model))
        first = await wait_for(run, lambda s: bool(s.pending_approvals))
        code, out, err = await cli(
            capsys, "steer", run.run_id, "pay 7 cents instead", "--skip-remaining"
        )
        assert code == 0, err
        assert "skipped" in out
        # The run goes on: its next turn asks for another payment, which waits.
        second = await wait_for(run, lambda s: [p.call_id for p in s.pending_approvals] == ["p2"])
        # A late decision for the withdrawn call is rejected, by update and by signal.
        with pytest.raises(WorkflowUpdateFailedError) as rejected:
            await run.approve("p1", arguments_hash=first.pending_approvals[0].arguments_hash)
        assert "no approval is pending" in str(rejected.value.cause)
        await run.handle.signal(
            "decision", ApprovalDecision(call_id="p1", approve=True, decider="late")
        )
        late = await events_named(run, "approval.rejected")
        await run.approve("p2", arguments_hash=second.pending_approvals[0].arguments_hash)
        result = await run.result()
        timeline = await run.timeline()
        withdrawn = await events_named(run, "approval.withdrawn")
        conversation = await run.conversation()
        await assert_not_wedged(run.handle, allowed=0)
    assert result.status == RunStatus.COMPLETED
    assert tools.ran == ["pay 7"]  # neither the withdrawn payment nor the step ever ran
    statuses = {(r.call_id, r.status) for r in timeline}
    assert statuses == {("p1", "skipped"), ("s1", "skipped"), ("p2", "completed")}
    assert [e.call_id for e in withdrawn] == ["p1"]
    assert "no approval is pending" in (late[0].detail or "")
    first_results = [m.content for m in conversation if m.role == "tool"][:2]
    assert first_results == [SKIPPED + "pay 7 cents instead"] * 2


async def test_a_steer_without_skip_lets_every_call_run(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    tools = Blocker()
    model = write_script(
        tmp_path,
        [
            calls(
                ("c1", "step", {"name": "hold"}),
                ("c2", "step", {"name": "second"}),
                ("c3", "step", {"name": "third"}),
            ),
            answer("all three, counted"),
        ],
    )
    async with running_worker(client, tools.registry, task_queue):
        run = await DurableTools(client, task_queue).start("three", config=AgentConfig(model=model))
        await asyncio.wait_for(tools.holding.wait(), 15)
        await run.steer("also count them")
        steered = await events_named(run, "run.steered")
        tools.release.set()
        result = await run.result()
        conversation = await run.conversation()
        events = [e.event for e in await run.events()]
        await assert_not_wedged(run.handle, allowed=0)
    assert result.status == RunStatus.COMPLETED
    assert tools.ran == ["hold", "second", "third"]
    assert "tool.skipped" not in events
    assert steered[0].detail == "[mid-turn] also count them"
    roles = [(m.role, m.tool_call_id or m.content) for m in conversation[-5:]]
    assert roles == [
        ("tool", "c1"),
        ("tool", "c2"),
        ("tool", "c3"),
        ("user", "also count them"),
        ("assistant", "all three, counted"),
    ]


HOSTILE: list[tuple[Any, str]] = [
    (None, "got NoneType"),
    (42, "got int"),
    (["stop"], "got list"),
    ("x" * 1_100_000, f"the limit is {MAX_STEER_CHARS:,}"),
    ({"instruction": "y" * 1_100_000, "skip_remaining": True}, f"the limit is {MAX_STEER_CHARS:,}"),
    ({"instruction": "stop", "skip_remaining": "yes"}, "skip_remaining: Input should be"),
    ({"instruction": "stop", "skip_remaining": True, "force": 1}, "force: Extra inputs"),
    ({"instruction": "   ", "skip_remaining": True}, "non-empty"),
    ({"skip_remaining": True}, "instruction: Field required"),
    ({"instruction": 7, "skip_remaining": True}, "instruction: Input should be"),
]


async def test_hostile_payloads_on_steer_turn_are_refused_and_skip_nothing(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    tools = Blocker()
    model = write_script(tmp_path, [calls(("p1", "pay", {"amount_cents": 5})), answer("done")])
    async with running_worker(client, tools.registry, task_queue):
        run = await DurableTools(client, task_queue).start("pay", config=AgentConfig(model=model))
        snapshot = await wait_for(run, lambda s: bool(s.pending_approvals))
        for payload, _ in HOSTILE:
            await run.handle.signal("steer_turn", payload)
        await run.handle.signal("steer_turn", "be brief")  # plain text is a plain steer
        refused = await events_named(run, "run.steer_refused", count=len(HOSTILE))
        await events_named(run, "run.steered")
        # Nothing refused took effect: the approval still waits, and can be given.
        still = await run.status()
        assert [p.call_id for p in still.pending_approvals] == ["p1"]
        await run.approve("p1", arguments_hash=snapshot.pending_approvals[0].arguments_hash)
        result = await run.result()
        conversation = await run.conversation()
        await assert_not_wedged(run.handle, allowed=0)
    assert result.status == RunStatus.COMPLETED
    assert tools.ran == ["pay 5"]
    for (_, why), event in zip(HOSTILE, refused, strict=True):
        assert why in (event.detail or ""), event.detail
        assert len(event.detail or "") <= 500
    users = [m.content for m in conversation if m.role == "user"]
    assert users[-1] == "be brief"


async def test_the_cli_refuses_an_empty_instruction_before_sending(
    cli_env: str, capsys: Any
) -> None:
    code, _, err = await cli(capsys, "steer", "any-run", "  ", "--skip-remaining")
    assert code == 2
    assert "not sent" in err and "non-empty" in err


@pytest.mark.parametrize("steer_first", [True, False], ids=["steer-first", "decision-first"])
async def test_a_steer_and_a_decision_in_one_workflow_task_go_by_history_order(
    client: Client, task_queue: str, tmp_path: Path, steer_first: bool
) -> None:
    """With no worker up, both signals land in one workflow task: the first one wins."""
    tools = Blocker()
    model = write_script(tmp_path, [calls(("p1", "pay", {"amount_cents": 5})), answer("done")])
    dt = DurableTools(client, task_queue)
    async with running_worker(client, tools.registry, task_queue):
        run = await dt.start("pay", config=AgentConfig(model=model))
        await wait_for(run, lambda s: bool(s.pending_approvals))
    steer = Steer(instruction="never mind", skip_remaining=True)
    decision = ApprovalDecision(call_id="p1", approve=True, decider="ops")
    signals: list[tuple[str, Any]] = [("steer_turn", steer), ("decision", decision)]
    for name, payload in signals if steer_first else reversed(signals):
        await run.handle.signal(name, payload)
    async with running_worker(client, tools.registry, task_queue):
        result = await run.result()
        timeline = await run.timeline()
        events = [e.event for e in await run.events()]
        await assert_not_wedged(run.handle, allowed=0)
    assert result.status == RunStatus.COMPLETED
    if steer_first:  # the approval was withdrawn before the decision arrived
        assert tools.ran == []
        assert timeline[0].status == "skipped"
        assert "approval.rejected" in events and "approval.decided" not in events
    else:  # the call was decided, so it was no longer waiting: it runs
        assert tools.ran == ["pay 5"]
        assert timeline[0].status == "completed"
        assert "tool.skipped" not in events
