"""`policy show|set`, `grants list|revoke` and `run --approval-policy` against the dev server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from temporalio.client import Client

import cli_support
from cli_support import cli
from durable_tools import DurableTools, GrantRequest, RunStatus, ToolRegistry
from durable_tools.worker import GrantStore
from support import answer, assert_not_wedged, calls, running_worker, wait_for, write_script

cli_env = cli_support.cli_env  # the fixture, by the name the tests ask for


def registry() -> ToolRegistry:
    tools = ToolRegistry()

    @tools.tool(approval=True, idempotent=True)
    def refund(amount_cents: int) -> str:
        """Refund."""
        return "ok"

    return tools


async def test_policy_and_grants_commands(
    client: Client, task_queue: str, tmp_path: Path, cli_env: str, capsys: Any
) -> None:
    model = write_script(
        tmp_path,
        [
            calls(("r1", "refund", {"amount_cents": 1})),
            calls(("r2", "refund", {"amount_cents": 2})),
            answer("done"),
        ],
    )
    policy = tmp_path / "policy.toml"
    policy.write_text('allow_tools = ["refund"]\n')
    bad = tmp_path / "bad.json"
    bad.write_text('{"allow_tool": ["refund"]}')
    store = tmp_path / "grants.json"
    async with running_worker(client, registry(), task_queue):
        run = await DurableTools(client, task_queue).start("go", model=model)
        await wait_for(run, lambda s: bool(s.pending_approvals))
        code, out, _ = await cli(capsys, "policy", "show", run.run_id)
        assert code == 0 and json.loads(out)["allow_tools"] == []
        code, _, err = await cli(capsys, "policy", "set", run.run_id, str(bad))
        assert code != 0 and "allow_tool" in err
        code, out, err = await cli(
            capsys, "policy", "set", run.run_id, str(policy), "--as", "ops", "--reason", "why"
        )
        assert code == 0, err
        await run.approve("r1", grant=GrantRequest())
        assert (await run.result()).status == RunStatus.COMPLETED
        code, out, _ = await cli(capsys, "grants", "list", "--run", run.run_id, "--json")
        [grant] = json.loads(out)
        code, out, err = await cli(
            capsys, "grants", "revoke", grant["grant_id"], "--run", run.run_id
        )
        assert code != 0  # the run has ended: its grants are gone with it
        timeline = {r.call_id: r.policy_layer for r in await run.timeline()}
        await assert_not_wedged(run.handle)
    assert timeline == {"r1": "person", "r2": "allow_list"}

    # The identity store, read and edited directly.
    code, out, _ = await cli(capsys, "grants", "list", "--store", str(store))
    assert out.strip() == "no grants"
    code, _, err = await cli(capsys, "grants", "revoke", "nope", "--store", str(store))
    assert code != 0 and "no grant 'nope'" in err
    assert await GrantStore(store).all() == []
