"""A run started by the release before the approval path's reshaping (39caa20), stopped
while it waits for a person, finishes on today's code: a worker of the old code runs in a
subprocess (the package from `git archive`), today's worker takes the run over."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from durable_tools import DurableTools, GrantRequest, RunStatus, ToolRegistry
from support import (
    answer,
    assert_not_wedged,
    assert_replays,
    calls,
    running_worker,
    wait_for,
    write_script,
)

PREVIOUS_RELEASE = "39caa20"
BEFORE_LIVE_DENY = "64af99f"
"""The code before a `set_policy` landing during a call's preflight could deny the call:
it went to a person (anyone) instead; today's code replays that as `legacy_live_deny`."""
REPO = Path(__file__).resolve().parents[2]

WORKER = textwrap.dedent(
    """
    import asyncio, sys
    from temporalio.client import Client
    from temporalio.contrib.pydantic import pydantic_data_converter
    from durable_tools import build_worker
    from upgrade_tools import tools

    async def main() -> None:
        client = await Client.connect(sys.argv[1], data_converter=pydantic_data_converter)
        async with build_worker(client, tools([]), task_queue=sys.argv[2]):
            print("ready", flush=True)
            await asyncio.Event().wait()

    asyncio.run(main())
    """
)

TOOLS = textwrap.dedent(
    '''
    from typing import Any
    from durable_tools import ToolRegistry

    def tools(executed: list[Any]) -> ToolRegistry:
        registry = ToolRegistry()

        def written(args: dict[str, Any]) -> str:
            return f"pay {args['amount_cents']} to {args['to']}"

        @registry.tool(approval=True, idempotent=True, approval_summary=written)
        def pay(to: str, amount_cents: int) -> str:
            """Pay someone."""
            executed.append(("pay", to, amount_cents))
            return "paid"

        @registry.tool(
            approval=True, idempotent=True, approval_summary="refund {amount_cents:money}"
        )
        def refund(amount_cents: int) -> str:
            """Refund."""
            executed.append(("refund", amount_cents))
            return "refunded"

        return registry
    '''
)


def previous_release(directory: Path, commit: str = PREVIOUS_RELEASE) -> Path:
    """The package as `commit` had it, or skip when git cannot give it."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", commit, "src"],
        capture_output=True,
        check=False,
    )
    if archive.returncode != 0:
        pytest.skip(f"git archive {commit} failed: {archive.stderr[:200]!r}")
    subprocess.run(["tar", "-x", "-C", str(directory)], input=archive.stdout, check=True)
    return directory / "src"


@contextlib.asynccontextmanager
async def old_worker(
    client: Client, task_queue: str, tmp_path: Path, commit: str = PREVIOUS_RELEASE
) -> AsyncIterator[None]:
    """A worker of `commit`'s code (the `TOOLS` registry) in a subprocess, until the block
    ends: then it is killed, as a deploy stops it, whatever its runs are waiting on."""
    old_src = previous_release(tmp_path, commit)
    (tmp_path / "upgrade_tools.py").write_text(TOOLS)
    (tmp_path / "old_worker.py").write_text(WORKER)
    target = client.service_client.config.target_host
    environment = {**os.environ, "PYTHONPATH": f"{old_src}{os.pathsep}{tmp_path}"}
    old = await asyncio.create_subprocess_exec(
        sys.executable,
        str(tmp_path / "old_worker.py"),
        target,
        task_queue,
        env=environment,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert old.stdout is not None
        assert (await asyncio.wait_for(old.stdout.readline(), 120)).strip() == b"ready"
        yield
    finally:
        old.kill()
        await old.wait()


async def test_a_run_waiting_under_the_previous_release_finishes_on_todays_code(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    (tmp_path / "upgrade_tools.py").write_text(TOOLS)
    sys.path.insert(0, str(tmp_path))
    try:
        from upgrade_tools import tools  # the same tools on both sides
    finally:
        sys.path.remove(str(tmp_path))
    executed: list[Any] = []
    model = write_script(
        tmp_path,
        [
            calls(("p1", "pay", {"to": "bob", "amount_cents": 500.0})),
            calls(
                ("p2", "pay", {"to": "bob", "amount_cents": 700}),
                ("r1", "refund", {"amount_cents": 1234}),
            ),
            answer("done"),
        ],
    )
    async with old_worker(client, task_queue, tmp_path):  # stopped while the run waits
        run = await DurableTools(client, task_queue).start("pay bob", model=model)
        snapshot = await wait_for(run, lambda s: bool(s.pending_approvals))
    (asked,) = snapshot.pending_approvals
    assert asked.summary == "pay 500 to bob"  # written by the old worker's function
    assert asked.arguments == {"to": "bob", "amount_cents": 500}

    registry: ToolRegistry = tools(executed)
    async with running_worker(client, registry, task_queue, max_cached_workflows=0):
        await run.approve(
            "p1", decider="alice", arguments_hash=asked.arguments_hash, grant=GrantRequest()
        )
        refund = await wait_for(run, lambda s: any(p.call_id == "r1" for p in s.pending_approvals))
        (shown,) = refund.pending_approvals
        assert shown.summary == "refund \u00ab12.34\u00bb"
        await run.approve("r1", decider="alice", arguments_hash=shown.arguments_hash)
        result = await run.result()
        records = {r.call_id: r for r in await run.timeline()}
        await assert_not_wedged(run.handle, allowed=0)
        await assert_replays(await run.handle.fetch_history())
    assert result.status == RunStatus.COMPLETED
    # The approval ran once; the grant alice gave covered the next payment; the refund asked.
    assert executed.count(("pay", "bob", 500)) == 1
    assert ("pay", "bob", 700) in executed and ("refund", 1234) in executed
    assert records["p2"].policy_layer is not None and records["p2"].policy_layer.startswith(
        "grant:"
    )


LIVE_DENY_STARTER = textwrap.dedent(
    """
    import asyncio, sys, threading
    from typing import Any
    from temporalio.client import Client
    from temporalio.contrib.pydantic import pydantic_data_converter
    from durable_tools.client import DurableTools
    from durable_tools.tools import ToolRegistry
    from durable_tools.worker import build_worker
    from durable_tools.workflows import AgentConfig, ApprovalPolicy

    asked, denied = threading.Event(), threading.Event()

    def written(args: dict[str, Any]) -> str:
        asked.set()
        denied.wait(4)  # under the worker's 5 s limit on summary functions
        return f"tip {args['amount_cents']}"

    registry = ToolRegistry()

    @registry.tool(approval=True, idempotent=True, approval_summary=written)
    def tip(amount_cents: int) -> str:
        \"\"\"Leave a tip.\"\"\"
        raise RuntimeError("the old worker never runs a tool")

    async def main() -> None:
        target, task_queue, model = sys.argv[1:4]
        client = await Client.connect(target, data_converter=pydantic_data_converter)
        async with build_worker(client, registry, task_queue=task_queue):
            config = AgentConfig(model=model, approval=ApprovalPolicy(deciders=("alice",)))
            run = await DurableTools(client, task_queue).start("tip", config=config)
            assert await asyncio.to_thread(asked.wait, 60)
            denying = ApprovalPolicy(deciders=("alice",), deny_tools=("tip",))
            await run.set_policy(denying, changed_by="security")
            denied.set()
            for _ in range(600):
                if (await run.status()).pending_approvals:
                    break
                await asyncio.sleep(0.1)
            print("pending", run.run_id, flush=True)
            await asyncio.Event().wait()

    asyncio.run(main())
    """
)


async def test_a_call_the_old_code_sent_to_a_person_after_a_live_deny_finishes_as_asked(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    old_src = previous_release(tmp_path, BEFORE_LIVE_DENY)
    (tmp_path / "starter.py").write_text(LIVE_DENY_STARTER)
    model = write_script(tmp_path, [calls(("t1", "tip", {"amount_cents": 500})), answer("done")])
    environment = {**os.environ, "PYTHONPATH": str(old_src)}
    target = client.service_client.config.target_host
    old = await asyncio.create_subprocess_exec(
        sys.executable,
        str(tmp_path / "starter.py"),
        target,
        task_queue,
        model,
        env=environment,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert old.stdout is not None
        line = (await asyncio.wait_for(old.stdout.readline(), 180)).decode().split()
    finally:
        old.kill()  # stopped while the call waits for a person
        await old.wait()
    assert line[:1] == ["pending"], line
    run = DurableTools(client, task_queue).run(line[1])

    executed: list[int] = []
    registry = ToolRegistry()

    def written(args: dict[str, Any]) -> str:
        return f"tip {args['amount_cents']}"

    @registry.tool(approval=True, idempotent=True, approval_summary=written)
    def tip(amount_cents: int) -> str:
        """Leave a tip."""
        executed.append(amount_cents)
        return "tipped"

    async with running_worker(client, registry, task_queue, max_cached_workflows=0):
        # Today's worker replays the old run: the call still waits, as the old code asked.
        again = await wait_for(run, lambda s: bool(s.pending_approvals), timeout=60)
        (asked,) = again.pending_approvals
        # As the old code asked after the live deny: anyone (the deny verdict named no
        # deciders, the run's policy names alice), its worker's summary kept.
        assert asked.summary == "tip 500" and asked.deciders == []
        await run.approve("t1", decider="alice", arguments_hash=asked.arguments_hash)
        result = await run.result()
        await assert_not_wedged(run.handle, allowed=0)
        await assert_replays(await run.handle.fetch_history())
    assert result.status == RunStatus.COMPLETED
    assert executed == [500]


BEFORE_BOUND_GRANTS = "3f0c4a7"
"""The code before standing grants bound the tool's schema and safety metadata: its
grants cover by name, and keep doing so on today's code."""


async def test_a_grant_the_old_code_gave_keeps_covering_the_tool_by_name(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    model = write_script(
        tmp_path,
        [
            calls(("p1", "pay", {"to": "bob", "amount_cents": 500})),
            calls(("r1", "refund", {"amount_cents": 100})),
            calls(("p2", "pay", {"to": "bob", "amount_cents": 700, "memo": "rent"})),
            answer("done"),
        ],
    )
    # Stopped while the refund waits, the grant given by the old code.
    async with old_worker(client, task_queue, tmp_path, BEFORE_BOUND_GRANTS):
        run = await DurableTools(client, task_queue).start("pay bob", model=model)
        (asked,) = (await wait_for(run, lambda s: bool(s.pending_approvals))).pending_approvals
        await run.approve(
            "p1", decider="alice", arguments_hash=asked.arguments_hash, grant=GrantRequest()
        )
        await wait_for(run, lambda s: any(p.call_id == "r1" for p in s.pending_approvals))

    executed: list[Any] = []
    registry = ToolRegistry()

    @registry.tool(approval=True, idempotent=True)
    def pay(to: str, amount_cents: int, memo: str = "") -> str:
        """Pay someone (today's tool has another input schema)."""
        executed.append(("pay", to, amount_cents))
        return "paid"

    @registry.tool(approval=True, idempotent=True)
    def refund(amount_cents: int) -> str:
        """Refund."""
        executed.append(("refund", amount_cents))
        return "refunded"

    async with running_worker(client, registry, task_queue, max_cached_workflows=0):
        waiting = await wait_for(run, lambda s: bool(s.pending_approvals), timeout=60)
        (shown,) = waiting.pending_approvals
        await run.approve("r1", decider="alice", arguments_hash=shown.arguments_hash)
        result = await run.result()
        records = {r.call_id: r for r in await run.timeline()}
        await assert_not_wedged(run.handle, allowed=0)
        await assert_replays(await run.handle.fetch_history())
    assert result.status == RunStatus.COMPLETED
    # The old grant binds no schema: it covers today's `pay` as it covered the old one.
    assert ("pay", "bob", 700) in executed
    layer = records["p2"].policy_layer
    assert layer is not None and layer.startswith("grant:"), records["p2"]
