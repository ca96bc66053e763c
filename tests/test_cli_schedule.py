"""Schedules: agent runs on a calendar, through the CLI and the Python client (dev server)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, ScheduleAlreadyRunningError, ScheduleHandle
from temporalio.service import RPCError

import cli_support
from cli_support import cli, cli_json
from durable_tools import (
    AgentConfig,
    DurableTools,
    RunStatus,
    ToolRegistry,
    search_attributes as sa,
)
from support import answer, calls, running_worker, wait_for, write_script

cli_env = cli_support.cli_env  # the fixture, by the name the tests ask for

NEVER_SOON = "0 0 1 1 *"  # midnight on January 1st: no run starts by itself in a test


def refund_registry() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(approval=True, idempotent=True)
    def refund(order_id: str) -> str:
        """Refund an order."""
        return f"refunded {order_id}"

    return registry


async def runs_started(handle: ScheduleHandle, count: int) -> list[str]:
    """The workflow ids of the schedule's runs, once it has started `count` (15 s at most)."""
    deadline = asyncio.get_running_loop().time() + 15
    while True:
        info = (await handle.describe()).info
        ids = [a.action.workflow_id for a in info.recent_actions]  # type: ignore[attr-defined]
        if len(ids) >= count:
            return ids
        assert asyncio.get_running_loop().time() < deadline, f"{len(ids)} runs started"
        await asyncio.sleep(0.1)


async def overlaps_skipped(handle: ScheduleHandle, count: int) -> None:
    deadline = asyncio.get_running_loop().time() + 15
    while (await handle.describe()).info.num_actions_skipped_overlap < count:
        assert asyncio.get_running_loop().time() < deadline, "the overlap was never skipped"
        await asyncio.sleep(0.1)


async def listed_until(
    capsys: Any, done: Callable[[dict[str, Any]], Any], timeout: float = 10
) -> dict[str, Any]:
    """`schedule list --json` by id, asked again until `done` holds or `timeout` passes."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        listed = {s["schedule_id"]: s for s in await cli_json(capsys, "schedule", "list")}
        if done(listed) or asyncio.get_running_loop().time() > deadline:
            return listed
        await asyncio.sleep(0.2)


async def test_schedule_create_trigger_skip_overlap_pause_delete(
    client: Client, task_queue: str, tmp_path: Path, cli_env: str, capsys: Any
) -> None:
    name = f"nightly-{uuid.uuid4().hex[:8]}"
    model = write_script(tmp_path, [calls(("r1", "refund", {"order_id": "A1"})), answer("done")])
    async with running_worker(client, refund_registry(), task_queue):
        code, out, err = await cli(
            capsys,
            "schedule",
            "create",
            name,
            "--cron",
            NEVER_SOON,
            "--prompt",
            "refund A1",
            "--model",
            model,
            "--name",
            "refunder",
            "--user",
            "alice",
        )
        assert code == 0, err
        assert f"schedule {name} created (next runs: " in out and "-01-01 00:00:00 UTC" in out

        listed = await listed_until(capsys, lambda found: name in found)
        assert listed[name]["cron"] == [NEVER_SOON]
        assert (listed[name]["agent_workflow"], listed[name]["paused"]) == (True, False)

        code, out, err = await cli(capsys, "schedule", "trigger", name)
        assert (code, out.strip()) == (0, f"schedule {name} triggered"), err
        handle = client.get_schedule_handle(name)
        [run_id] = await runs_started(handle, 1)
        assert run_id.startswith(f"{name}-")  # the run's id names its schedule

        tools = DurableTools(client, task_queue)
        run = tools.run(run_id)
        snapshot = await wait_for(run, lambda s: bool(s.pending_approvals))
        attributes = (await run.handle.describe()).typed_search_attributes
        assert attributes.get(sa.AGENT_NAME) == "refunder"
        assert attributes.get(sa.AGENT_STATUS) == RunStatus.AWAITING_APPROVAL.value
        assert snapshot.agent == "refunder"
        assert run_id in {r.run_id for r in await tools.pending()}

        # Overlap policy skip: a run due while the last one waits on a person starts none.
        code, _, err = await cli(capsys, "schedule", "trigger", name)
        assert code == 0, err
        await overlaps_skipped(handle, 1)
        assert len((await handle.describe()).info.running_actions) == 1

        await run.approve("r1", decider="bob")
        result = await run.result()
        assert (result.status, result.final_answer) == (RunStatus.COMPLETED, "done")

        code, out, err = await cli(capsys, "schedule", "pause", name, "--note", "holiday")
        assert (code, out.strip()) == (0, f"schedule {name} paused"), err
        # The list comes from the visibility store, which follows a pause a moment later.
        listed = await listed_until(capsys, lambda found: found.get(name, {}).get("paused"))
        assert (listed[name]["paused"], listed[name]["note"]) == (True, "holiday")
        code, out, err = await cli(capsys, "schedule", "unpause", name)
        assert code == 0, err
        assert (await handle.describe()).schedule.state.paused is False

        code, out, err = await cli(capsys, "schedule", "delete", name)
        assert (code, out.strip()) == (0, f"schedule {name} deleted"), err
        listed = await listed_until(capsys, lambda found: name not in found)
        assert name not in listed
        code, _, err = await cli(capsys, "schedule", "trigger", name)
        assert code == 2 and f"no schedule named {name!r}" in err


async def test_schedule_refuses_what_it_cannot_keep(
    client: Client, task_queue: str, tmp_path: Path, cli_env: str, capsys: Any
) -> None:
    tools = DurableTools(client, task_queue)
    name = f"s-{uuid.uuid4().hex[:8]}"
    base = ("schedule", "create", name, "--prompt", "p", "--model", "scripted:x.json")

    code, _, err = await cli(capsys, *base, "--cron", "every tuesday-ish")
    assert code == 2 and "the server refused the request" in err and "CronString" in err
    with pytest.raises(SystemExit):  # argparse: shorter than the server allows
        await cli(capsys, *base, "--cron", NEVER_SOON, "--catchup-window", "1")
    with pytest.raises(SystemExit):
        await cli(capsys, *base, "--cron", NEVER_SOON, "--catchup-window", "nan")
    code, _, err = await cli(capsys, "schedule", "pause", "two words")
    assert code == 2 and "invalid schedule id" in err
    code, _, err = await cli(
        capsys, "schedule", "create", "x" * 201, *base[3:], "--cron", "* * * * *"
    )
    assert code == 2 and "1-200 characters" in err

    # An auto-upgrade run needs an override at its start, which a schedule cannot give.
    with pytest.raises(ValueError, match="upgrade_on_continue"):
        await tools.create_schedule(
            name,
            "p",
            cron=NEVER_SOON,
            config=AgentConfig(model="scripted:x.json", versioning="auto_upgrade"),
        )
    with pytest.raises(ValueError, match="cron expression"):
        await tools.create_schedule(name, "p", cron=[], model="scripted:x.json")
    with pytest.raises(ValueError, match="overlap must be one of"):
        await tools.create_schedule(
            name,
            "p",
            cron=NEVER_SOON,
            model="scripted:x.json",
            overlap="sometimes",  # type: ignore[arg-type]
        )
    with pytest.raises(RPCError):  # nothing was created by the refusals above
        await client.get_schedule_handle(name).describe()

    handle = await tools.create_schedule(
        name, "p", cron=NEVER_SOON, model="scripted:x.json", catchup_window=timedelta(minutes=1)
    )
    try:
        described = await handle.describe()
        assert described.schedule.policy.catchup_window == timedelta(minutes=1)
        with pytest.raises(ScheduleAlreadyRunningError):
            await tools.create_schedule(name, "p", cron=NEVER_SOON, model="scripted:x.json")
        code, _, err = await cli(capsys, *base, "--cron", NEVER_SOON)
        assert code == 2 and f"a schedule named {name!r} already exists" in err
    finally:
        await handle.delete()
