"""Helpers shared by the durable tests: scripts, workers and history inspection."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import socket
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import WorkflowTaskFailedCause
from temporalio.client import Client, WorkflowHandle, WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from durable_tools import (
    AgentConfig,
    AgentResult,
    AgentRun,
    ApprovalPolicy,
    DurableTools,
    ExecutionStrategy,
    ToolRegistry,
    build_worker,
)
from durable_tools.worker import workflow_runner
from durable_tools.workflows import AgentWorkflow, RunSnapshot


def write_script(directory: Path, steps: list[dict[str, Any]]) -> str:
    """Write a scripted model file and return its model spec (`scripted:PATH`)."""
    path = directory / f"script-{uuid.uuid4().hex[:8]}.json"
    path.write_text(json.dumps({"steps": steps}))
    return f"scripted:{path}"


_PORT_BLOCKS_START = 20_000
_PORT_BLOCK = 2_000
_picked = itertools.count()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now, and is likely to stay free.

    A port the kernel hands out for port 0 comes from its ephemeral range, which every
    outgoing connection and every server binding port 0 draw from too: under `make test`'s
    three processes one of them took such a port before the server it was picked for bound
    it ("address already in use"). So the port comes from below that range, from a block of
    its own for each pytest-xdist process; the port 1,000 above it (a dev server's UI) is in
    the same block and free too.
    """
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    index = int(worker[2:]) if worker[2:].isdigit() else 0
    base = _PORT_BLOCKS_START + index * _PORT_BLOCK
    if base + _PORT_BLOCK <= _ephemeral_start():
        for _ in range(_PORT_BLOCK // 2):
            port = base + next(_picked) % (_PORT_BLOCK // 2)
            if _bindable(port) and _bindable(port + _PORT_BLOCK // 2):
                return port
    with socket.socket() as sock:  # no block of our own: as the kernel gives
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _ephemeral_start() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768  # Linux's default; elsewhere the fallback above is as good as before


def calls(*calls: tuple[str, str, Any]) -> dict[str, Any]:
    """A scripted step asking for tool calls `(id, name, arguments)`."""
    return {"tool_calls": [{"id": i, "name": n, "arguments": a} for i, n, a in calls]}


def answer(text: str) -> dict[str, Any]:
    """A scripted step giving the final answer."""
    return {"text": text}


def quick_slow_registry(gate: asyncio.Event) -> ToolRegistry:
    """Read-only tools `quick(n)`, which answers at once, and `slow(n)`, once `gate` is set."""
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    async def quick(n: int) -> str:
        """Answers at once."""
        return f"quick {n}"

    @registry.tool(read_only=True)
    async def slow(n: int) -> str:
        """Answers when the test lets it."""
        await gate.wait()
        return f"slow {n}"

    return registry


def quick_slow_config(directory: Path) -> AgentConfig:
    """One parallel turn for `quick_slow_registry`: quick (call a), slow (b), and quick with
    an invalid argument (c); then the answer "done"."""
    model = write_script(
        directory,
        [
            calls(("a", "quick", {"n": 1}), ("b", "slow", {"n": 2}), ("c", "quick", {"n": "x"})),
            answer("done"),
        ],
    )
    return AgentConfig(model=model, strategy=ExecutionStrategy(mode="parallel"))


@asynccontextmanager
async def running_worker(
    client: Client, registry: ToolRegistry, task_queue: str, **options: Any
) -> AsyncIterator[None]:
    """Run a worker for `registry` on `task_queue` for the duration of the block."""
    worker = build_worker(client, registry, task_queue=task_queue, **options)
    async with worker:
        yield


@asynccontextmanager
async def run_to_the_end(
    client: Client,
    registry: ToolRegistry,
    task_queue: str,
    config: AgentConfig,
    *,
    prompt: str = "go",
    **options: Any,
) -> AsyncIterator[tuple[AgentRun, AgentResult]]:
    """A worker for `registry` on `task_queue` (`options` go to `build_worker`) and a run
    of `config` on it, taken to its end: the run and its result, for the block (a finished
    run's queries still need a worker)."""
    async with running_worker(client, registry, task_queue, **options):
        run = await DurableTools(client, task_queue).start(prompt, config=config)
        yield run, await run.result()


async def result_of_run(
    client: Client, registry: ToolRegistry, task_queue: str, config: AgentConfig, **options: Any
) -> AgentResult:
    """The result of a run of `config`, taken to its end by a worker for `registry`
    (`run_to_the_end`)."""
    async with run_to_the_end(client, registry, task_queue, config, **options) as (_, result):
        return result


async def history_of(handle: WorkflowHandle[Any, Any]) -> WorkflowHistory:
    return await handle.fetch_history()


def event_attributes(history: WorkflowHistory, field: str) -> list[Any]:
    """The `field` attributes (`"activity_task_scheduled_event_attributes"`, ...) of the
    history's events that have them, in order."""
    return [getattr(event, field) for event in history.events if event.HasField(field)]


def scheduled_activities(history: WorkflowHistory) -> list[str]:
    """Activity type names scheduled in a history, in order (regular activities only)."""
    scheduled = event_attributes(history, "activity_task_scheduled_event_attributes")
    return [attributes.activity_type.name for attributes in scheduled]


def local_activity_markers(history: WorkflowHistory) -> int:
    return sum(1 for e in history.events if e.HasField("marker_recorded_event_attributes"))


def local_activity_types(history: WorkflowHistory) -> list[str]:
    """The activity type of each local activity the run recorded, in order."""
    found = []
    for e in history.events:
        marker = e.marker_recorded_event_attributes
        if e.HasField("marker_recorded_event_attributes") and (
            marker.marker_name == "core_local_activity"
        ):
            data = json.loads(marker.details["data"].payloads[0].data)
            found.append(str(data["activity_type"]))
    return found


async def wait_for(
    run: AgentRun, check: Callable[[RunSnapshot], bool], timeout: float = 15
) -> RunSnapshot:
    """Poll the run's status until `check` holds; fail with the last status after `timeout`."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        snapshot = await run.status()
        if check(snapshot):
            return snapshot
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{run.run_id} never reached the expected state: {snapshot}")
        await asyncio.sleep(0.1)


# The prefix of a failure sdk-core raises from its own state machines (not from workflow
# code, which fails as a Python exception or a nondeterminism error).
SDK_INTERNAL_FAILURE = "Fatal error in workflow machines"


def workflow_task_failures(history: WorkflowHistory) -> list[str]:
    """The failure messages of the `WorkflowTaskFailed` events in a history, in order.

    Left out: the server's own "unhandled command" failures. When a signal or an update
    arrives while a worker completes a task that would close the run, the server refuses
    that completion so the worker sees the new event first. That happens by timing, with
    no fault in the workflow code, and the next task goes on.
    """
    failed = event_attributes(history, "workflow_task_failed_event_attributes")
    unhandled = WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND
    return [a.failure.message for a in failed if a.cause != unhandled]


async def assert_not_wedged(handle: WorkflowHandle[Any, Any], *, allowed: int = 1) -> None:
    """Fail when the run's history shows its workflow task failing again and again.

    A wedged run is one whose workflow task fails on every attempt: its status goes stale
    and queries and updates fail. One failure can be a worker restart mid-task; more than
    `allowed` is the loop this helper exists to catch.

    One failure of sdk-core's own local-activity bookkeeping is also let through, apart
    from `allowed`: under `max_cached_workflows=0`, an update arriving while a local
    activity's marker is being recorded failed one task once in CI ("Attempted to check
    for LA marker handling in invalid state MarkerCommandCreated"), and the next attempt
    replayed from history and went on. A second one is a wedge like any other.
    """
    failures = workflow_task_failures(await handle.fetch_history())
    internal = [f for f in failures if f.startswith(SDK_INTERNAL_FAILURE)]
    ours = [f for f in failures if not f.startswith(SDK_INTERNAL_FAILURE)]
    assert len(ours) <= allowed and len(internal) <= 1, (
        f"workflow task failed {len(failures)} times (wedged run): {failures[:3]}"
    )


async def decisions_sent(run: AgentRun) -> list[dict[str, Any]]:
    """The decisions the run accepted, as they were sent (from its history)."""
    history = await run.handle.fetch_history()
    accepted = event_attributes(history, "workflow_execution_update_accepted_event_attributes")
    return [json.loads(a.accepted_request.input.args.payloads[0].data) for a in accepted]


async def notice_token(client: Client, child_id: str) -> str:
    """The token the sub-agent run `child_id` puts in its notices to its parent, read
    from its start input as anyone who may read its history can (docs/security.md)."""
    history = await client.get_workflow_handle(child_id).fetch_history()
    started = history.events[0].workflow_execution_started_event_attributes
    token = json.loads(started.input.payloads[0].data)["report_token"]
    assert isinstance(token, str), token
    return token


def researcher_registry(
    directory: Path, executed: list[str], *, approval: ApprovalPolicy | None = None
) -> ToolRegistry:
    """`publish(text)` (needs approval; appends `text` to `executed` when it runs) and a
    `researcher` sub-agent (its policy `approval`, if given) that publishes "findings"
    once (call `pub`), then answers."""
    registry = ToolRegistry()

    @registry.tool(
        approval=True, idempotent=True, approval_summary="publish {text}", label="Publish"
    )
    def publish(text: str) -> str:
        """Publish a text (needs approval)."""
        executed.append(text)
        return "published"

    steps = [calls(("pub", "publish", {"text": "findings"})), answer("published them")]
    config = AgentConfig(name="researcher", model=write_script(directory, steps))
    if approval is not None:
        config = config.model_copy(update={"approval": approval})
    registry.subagent(
        config, name="researcher", description="Researches a topic and publishes the findings."
    )
    return registry


def delegating_model(directory: Path) -> str:
    """A parent's script: ask the `researcher` once (call `r1`), then answer."""
    return write_script(
        directory, [calls(("r1", "researcher", {"task": "find things"})), answer("all done")]
    )


def subagent_wait(run_id: str, call_id: str, arguments_hash: str, **changed: Any) -> dict[str, Any]:
    """A wait as a sub-agent's notice lists it: run `run_id` waits to `publish` (call
    `call_id`), requested now; `changed` sets any other field."""
    wait: dict[str, Any] = {
        "run_id": run_id,
        "call_id": call_id,
        "tool": "publish",
        "arguments_hash": arguments_hash,
        "requested_at": datetime.now(UTC).isoformat(),
    }
    return {**wait, **changed}


def subagent_notice(
    child_id: str, /, *waits: dict[str, Any], seq: int = 10**6, **changed: Any
) -> dict[str, Any]:
    """A notice of the sub-agent run `child_id` listing `waits` (the `subagent_waits`
    signal's input), sent now, as anyone who may signal the parent can send it;
    `changed` sets any field (`child_id`, `waits`, `sent_at`, `token`, or an unknown one)."""
    sent = {"child_id": child_id, "sent_at": datetime.now(UTC).isoformat(), "seq": seq}
    return {**sent, "waits": list(waits), **changed}


async def assert_replays(history: WorkflowHistory) -> None:
    """`history` replays with the strict sandbox, without any activity or worker: the
    workflow code is deterministic for it (patch markers included)."""
    replayer = Replayer(
        workflows=[AgentWorkflow],
        data_converter=pydantic_data_converter,
        workflow_runner=workflow_runner(strict=True),
    )
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, result.replay_failure
