"""The tool runtime on its own (`ToolRuntime`) in a plain workflow with no model, on a real
dev server: an approval-gated tool waits durably, is decided through the host's prefixed
handlers (the CLI's `--prefix`, `AgentRun(..., prefix=)`), and runs exactly once."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

import pytest
from temporalio import workflow
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from cli_support import cli, cli_env, cli_json  # noqa: F401  (a fixture)
    from durable_tools.client import AgentRun, StaleRequest
    from durable_tools.tools import ToolRegistry
    from durable_tools.workflows import (
        AgentConfig,
        ApprovalPolicy,
        RunEvent,
        RunSnapshot,
        ToolRuntime,
    )
from support import assert_not_wedged, running_worker, wait_for

NO_MODEL = "none:tool-runtime"

PREFIX = "tools_"


@workflow.defn(sandboxed=True)
class OrderPipeline:
    """A deterministic order workflow: one step refunds, and a person approves it."""

    @workflow.init
    def __init__(self, orders: list[str]) -> None:
        self.tools = ToolRuntime(AgentConfig(name="orders", model="none:tool-runtime"))

    @workflow.run
    async def run(self, orders: list[str]) -> list[list[Any]]:
        replies = []
        for order in orders:
            # One call id for every order: each use is a new request with its own hash.
            reply = await self.tools.call("refund", {"order_id": order}, call_id="refund")
            replies.append([reply.call_id, reply.status, reply.ok, reply.content])
        return replies


def refund_registry(ran: list[str]) -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(approval=True, idempotent=True)
    def refund(order_id: str) -> str:
        """Refund an order (a person approves it)."""
        ran.append(order_id)
        return f"refunded {order_id}"

    return registry


def _pending(client: Client, host_id: str, count: int = 0) -> Awaitable[RunSnapshot]:
    """The runtime's status once a call waits (the `count`-th use of the call id)."""
    run = AgentRun(client, host_id, prefix=PREFIX)
    return wait_for(run, lambda s: bool(s.pending_approvals) and s.tool_calls > count, 60)


@pytest.mark.usefixtures("cli_env")
async def test_a_plain_workflow_waits_for_approval_and_the_tool_runs_once(
    client: Client, task_queue: str, capsys: pytest.CaptureFixture[str]
) -> None:
    ran: list[str] = []
    registry = refund_registry(ran)
    handle = await client.start_workflow(
        OrderPipeline.run, ["A1", "B2"], id=f"orders-{task_queue}", task_queue=task_queue
    )
    async with running_worker(client, registry, task_queue, workflows=[OrderPipeline]):
        first = (await _pending(client, handle.id)).pending_approvals[0]
        assert (first.call_id, first.tool, first.arguments) == (
            "refund",
            "refund",
            {"order_id": "A1"},
        )
        assert ran == []
        # Listed by `durable-tools pending` (the host is no agent workflow), with its hash
        # and the commands that decide it under the prefix; the UI's details say the same.
        code, out, err = await cli(capsys, "pending")
        assert code == 0, err
        assert f"{handle.id}  agent orders  awaiting_approval" in out
        assert f"--hash {first.arguments_hash} --prefix {PREFIX}" in out
        # The dev server is shared with other tests: other runs may wait too.
        listed = await cli_json(capsys, "pending")
        [entry] = [e for e in listed if e["run_id"] == handle.id]
        assert entry["prefix"] == PREFIX
        assert [a["arguments_hash"] for a in entry["approvals"]] == [first.arguments_hash]
        metadata = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
        assert f"--hash {first.arguments_hash} --prefix {PREFIX}`" in metadata.current_details
        # The CLI decides it like an embedded loop's call: host id, call id, --prefix.
        code, _, err = await cli(
            capsys, "approve", handle.id, "refund", "--prefix", PREFIX,
            "--hash", first.arguments_hash, "--as", "alice",
        )  # fmt: skip
        assert code == 0, err
        second = (await _pending(client, handle.id, count=1)).pending_approvals[0]
        # `show` reads the host like a run: the waiting call with its hash, the decided one.
        code, out, err = await cli(capsys, "show", handle.id, "--prefix", PREFIX)
        assert code == 0, err
        assert second.arguments_hash in out and "approved by alice" in out
    assert second.arguments == {"order_id": "B2"} and ran == ["A1"]
    # The worker went away while the second call waited; a new one with no cache (every
    # task replays the history from the start) finishes the run.
    async with running_worker(
        client, registry, task_queue, workflows=[OrderPipeline], max_cached_workflows=0
    ):
        run = AgentRun(client, handle.id, prefix=PREFIX)
        # The call id is reused: the first request's hash names nothing pending.
        with pytest.raises(StaleRequest):
            await run.decide_request(
                "refund", True, arguments_hash=first.arguments_hash, decider="bob"
            )
        await run.decide_request(
            "refund", True, arguments_hash=second.arguments_hash, decider="bob"
        )
        replies = await handle.result()
        # A query of the closed host replays it on a worker: the runtime's state is there.
        status = await run.status()
        timeline = await _timeline(handle)
    assert ran == ["A1", "B2"]
    assert [r[1:3] for r in replies] == [["completed", True], ["completed", True]]
    assert "refunded A1" in replies[0][3] and "refunded B2" in replies[1][3]
    assert [(c.tool, c.decided_by, c.status) for c in timeline] == [
        ("refund", "alice", "completed"),
        ("refund", "bob", "completed"),
    ]
    assert status.tool_calls == 2 and status.pending_approvals == []


async def _timeline(handle: WorkflowHandle[Any, Any]) -> list[Any]:
    from durable_tools.workflows import ToolCallRecord

    return list(await handle.query(f"{PREFIX}timeline", result_type=list[ToolCallRecord]))


async def test_a_denial_is_the_reply_and_the_tool_never_runs(
    client: Client, task_queue: str
) -> None:
    ran: list[str] = []
    handle = await client.start_workflow(
        OrderPipeline.run, ["C3"], id=f"orders-deny-{task_queue}", task_queue=task_queue
    )
    async with running_worker(client, refund_registry(ran), task_queue, workflows=[OrderPipeline]):
        await _pending(client, handle.id)
        # Denying needs no hash: the safe direction.
        await AgentRun(client, handle.id, prefix=PREFIX).decide_request(
            "refund", False, arguments_hash=None, decider="carol", reason="duplicate"
        )
        [[call_id, status, ok, content]] = await handle.result()
    assert (call_id, status, ok) == ("refund", "denied", False)
    assert "carol" in content and "duplicate" in content
    assert ran == []


@workflow.defn(sandboxed=True)
class ProbeWorkflow:
    """Calls no model would make well: each must be answered, none may wedge the host."""

    @workflow.init
    def __init__(self, policy: ApprovalPolicy) -> None:
        self.tools = ToolRuntime(AgentConfig(name="probe", model=NO_MODEL, approval=policy))

    @workflow.run
    async def run(self, policy: ApprovalPolicy) -> list[list[Any]]:
        tools = self.tools
        replies = [
            await tools.call("lookup", {"order_id": float("nan")}, call_id="nan"),
            await tools.call("lookup", {"order_id": {1, 2}}, call_id="a set"),
            await tools.call("lookup", {"order_id": 5}, call_id="schema"),
            await tools.call("lookup", '{"order_id": ', call_id="torn"),  # a model's JSON text
            await tools.call("no_such_tool", {}, call_id="ghost"),
            await tools.call("lookup", {"order_id": "A"}, call_id="x" * 5000),
            # Two calls at once under one id would share one approval: the second is refused.
            *await asyncio.gather(
                tools.call("lookup", {"order_id": "B"}, call_id="same"),
                tools.call("lookup", {"order_id": "C"}, call_id="same"),
            ),
            await tools.call("refund", {"order_id": "D"}),  # denied by policy
        ]
        return [[r.call_id, r.status, r.ok, r.content] for r in replies]


def probe_registry(ran: list[str]) -> ToolRegistry:
    registry = refund_registry(ran)

    @registry.tool(read_only=True)
    def lookup(order_id: str) -> str:
        """Look an order up."""
        ran.append(f"lookup {order_id}")
        return f"order {order_id}"

    return registry


async def test_hostile_calls_are_answered_and_never_run(client: Client, task_queue: str) -> None:
    ran: list[str] = []
    handle = await client.start_workflow(
        ProbeWorkflow.run,
        ApprovalPolicy(deny_tools=("refund",)),
        id=f"probe-{task_queue}",
        task_queue=task_queue,
    )
    async with running_worker(client, probe_registry(ran), task_queue, workflows=[ProbeWorkflow]):
        replies = await handle.result()
    await assert_not_wedged(handle, allowed=0)
    statuses = [(status, ok) for _, status, ok, _ in replies]
    assert statuses == [
        ("invalid", False),
        ("invalid", False),
        ("invalid", False),
        ("invalid", False),
        ("invalid", False),
        ("completed", True),
        ("completed", True),
        ("invalid", False),
        ("denied", False),
    ]
    assert "was not run" in replies[0][3] and "Out of range float" in replies[0][3]
    assert "JSON" in replies[3][3] and replies[3][0] == "torn"
    assert "no tool of that name" in replies[4][3] and "lookup, refund" in replies[4][3]
    assert len(replies[5][0]) <= 256 and replies[5][0].startswith("x" * 32)
    assert "is used by a call still running" in replies[7][3]
    assert replies[8][0] == "call-9" and "denied by policy" in replies[8][3]
    assert ran == ["lookup A", "lookup B"]


async def test_a_policy_that_ends_the_run_fails_the_host(client: Client, task_queue: str) -> None:
    handle = await client.start_workflow(
        ProbeWorkflow.run,
        ApprovalPolicy(deny_tools=("lookup",), on_deny="end_run"),
        id=f"probe-end-{task_queue}",
        task_queue=task_queue,
    )
    async with running_worker(client, probe_registry([]), task_queue, workflows=[ProbeWorkflow]):
        with pytest.raises(WorkflowFailureError) as failed:
            await handle.result()
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "ToolRuntime:failed"
    assert cause.non_retryable and "denied by policy" in cause.message
    await assert_not_wedged(handle, allowed=0)


@workflow.defn(sandboxed=True)
class ManyCallsWorkflow:
    """A long-lived host that makes more calls than the runtime keeps in its timeline."""

    @workflow.init
    def __init__(self, calls: int) -> None:
        self.tools = ToolRuntime(AgentConfig(name="many", model=NO_MODEL, events_kept=100))

    @workflow.run
    async def run(self, calls: int) -> int:
        done = 0
        for start in range(0, calls, 20):
            batch = range(start, min(start + 20, calls))
            replies = await asyncio.gather(
                *(self.tools.call("lookup", {"order_id": f"O{i}"}) for i in batch)
            )
            done += sum(reply.ok for reply in replies)
        return done


async def test_a_long_lived_host_keeps_bounded_state(client: Client, task_queue: str) -> None:
    ran: list[str] = []
    handle = await client.start_workflow(
        ManyCallsWorkflow.run, 520, id=f"many-{task_queue}", task_queue=task_queue
    )
    async with running_worker(
        client, probe_registry(ran), task_queue, workflows=[ManyCallsWorkflow]
    ):
        assert await handle.result() == 520
        status = await handle.query(f"{PREFIX}status", result_type=RunSnapshot)
        timeline = await _timeline(handle)
        events = await handle.query(f"{PREFIX}events", result_type=list[RunEvent])
    assert len(ran) == 520 and status.tool_calls == 520
    # The latest 500 calls, then nothing else held per call: no running, no pending.
    assert len(timeline) == 500 and timeline[-1].call_id == "call-520"
    assert len(events) == 100 and status.running_tools == [] and status.pending_approvals == []
