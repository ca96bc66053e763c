"""The operator's commands on a run, against the session's dev server: approve/deny when the
run's worker just died, deny without --hash, steer on an ended run, cancel twice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from temporalio.client import Client

import cli_support
from cli_support import cli
from durable_tools import AgentRun, DurableTools, RunStatus
from support import answer, calls, decisions_sent, running_worker, wait_for, write_script
from test_cli_approvals import pay_registry

cli_env = cli_support.cli_env  # the fixture, by the name the tests ask for


def one_line(err: str) -> str:
    """The one line a refused command prints (fails on a traceback or several lines)."""
    assert "Traceback" not in err, err
    [line] = err.strip().splitlines()
    return line


async def finished_run(client: Client, task_queue: str, tmp_path: Path) -> AgentRun:
    """A run that has completed."""
    model = write_script(tmp_path, [answer("done")])
    async with running_worker(client, pay_registry(), task_queue):
        finished = await DurableTools(client, task_queue).start("hi", model=model)
        assert (await finished.result()).status == RunStatus.COMPLETED
    return finished


async def test_a_decision_right_after_the_worker_died_is_refused_in_one_line(
    client: Client, task_queue: str, tmp_path: Path, cli_env: str, capsys: Any
) -> None:
    model = write_script(tmp_path, [calls(("c1", "pay", {"amount_cents": 5})), answer("ok")])
    async with running_worker(client, pay_registry(), task_queue):
        run = await DurableTools(client, task_queue).start("pay", model=model)
        [pending] = (await wait_for(run, lambda s: bool(s.pending_approvals))).pending_approvals
    # The worker stopped a moment ago: the server still counts it as polling.
    try:
        for verb in ("approve", "deny"):
            code, _, err = await cli(
                capsys, verb, run.run_id, "c1", "--hash", pending.arguments_hash
            )
            assert code == 2
            line = one_line(err)
            assert "worker" in line and "nothing was decided" in line, line
            assert "RPCError" not in line
        assert await decisions_sent(run) == []
    finally:
        await run.handle.terminate("test over")


async def test_deny_needs_no_hash_but_still_refuses_an_unknown_or_decided_call(
    client: Client, task_queue: str, tmp_path: Path, cli_env: str, capsys: Any
) -> None:
    # An operator stopping a payment at 3 a.m., from a script (no terminal), without a hash.
    model = write_script(
        tmp_path,
        [
            calls(("c1", "pay", {"amount_cents": 5_000_000}), ("c2", "pay", {"amount_cents": 7})),
            answer("ok"),
        ],
    )
    async with running_worker(client, pay_registry(), task_queue):
        run = await DurableTools(client, task_queue).start("pay", model=model)
        [first] = (await wait_for(run, lambda s: bool(s.pending_approvals))).pending_approvals
        # Approving still names the request: no hash, no terminal, nothing decided.
        code, out, err = await cli(capsys, "approve", run.run_id, "c1", "--as", "ops")
        assert code == 2 and "--hash" in err and "5000000" not in out + err

        code, out, err = await cli(capsys, "deny", run.run_id, "c9", "--as", "ops")
        assert code == 2 and "no approval is pending for call c9" in one_line(err)
        assert "pending: c1" in err

        code, out, err = await cli(
            capsys, "deny", run.run_id, "c1", "--as", "ops", "--reason", "not at 3 a.m."
        )
        assert code == 0, err
        # What was denied is shown, with its hash.
        assert '"amount_cents": 5000000' in out and first.arguments_hash in out
        assert f"denied: call c1 of run {run.run_id}" in out
        [sent] = await decisions_sent(run)
        assert sent["approve"] is False and sent["arguments_hash"] == first.arguments_hash

        await wait_for(run, lambda s: [a.call_id for a in s.pending_approvals] == ["c2"])
        code, _, err = await cli(capsys, "deny", run.run_id, "c1", "--as", "bob")
        assert code == 2
        assert f"call c1 of run {run.run_id} was already denied by ops at " in one_line(err)
        assert "not at 3 a.m." in err
        assert len(await decisions_sent(run)) == 1
        await run.cancel("test over")
        await run.result()


async def test_steer_on_an_ended_run_says_how_it_ended(
    client: Client, task_queue: str, tmp_path: Path, cli_env: str, capsys: Any
) -> None:
    finished = await finished_run(client, task_queue, tmp_path)
    code, _, err = await cli(capsys, "steer", finished.run_id, "be brief")
    assert code == 2
    assert f"run {finished.run_id} has ended (COMPLETED): nothing to steer" in one_line(err)


async def test_cancel_says_a_cancellation_was_already_asked_for_or_how_the_run_ended(
    client: Client, task_queue: str, tmp_path: Path, cli_env: str, capsys: Any
) -> None:
    finished = await finished_run(client, task_queue, tmp_path)
    code, _, err = await cli(capsys, "cancel", finished.run_id)
    assert code == 2
    assert f"run {finished.run_id} has ended (COMPLETED): nothing to cancel" in one_line(err)

    waiting = await DurableTools(client, task_queue).start("nobody serves me", model="scripted:x")
    try:
        code, out, _ = await cli(capsys, "cancel", waiting.run_id, "--reason", "first")
        assert code == 0 and f"cancellation requested for run {waiting.run_id}" in out
        code, out, _ = await cli(capsys, "cancel", waiting.run_id, "--reason", "again")
        assert code == 0
        assert f"cancellation was already requested for run {waiting.run_id}" in out
    finally:
        await waiting.handle.terminate("test over")

    paying = write_script(tmp_path, [calls(("c1", "pay", {"amount_cents": 5})), answer("ok")])
    async with running_worker(client, pay_registry(), task_queue):
        cancelled = await DurableTools(client, task_queue).start("pay", model=paying)
        await wait_for(cancelled, lambda s: bool(s.pending_approvals))
        await cancelled.cancel("stop")
        assert (await cancelled.result()).status == RunStatus.CANCELLED
    code, out, _ = await cli(capsys, "cancel", cancelled.run_id)
    assert code == 0 and f"run {cancelled.run_id} was already cancelled" in out
    code, _, err = await cli(capsys, "steer", cancelled.run_id, "go on")
    assert code == 2 and "has ended (CANCELED)" in one_line(err)
