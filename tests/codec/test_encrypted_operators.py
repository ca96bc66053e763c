"""Operators without the codec keys: encrypted runs are said to be encrypted, never a crash,
and every other run is listed as usual (issue #22)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from codec_support import ARGUMENT, encrypting_client
from temporalio.client import Client

import cli_support
from cli_support import cli, cli_json
from durable_tools import DurableTools, ToolRegistry
from support import answer, calls, running_worker, wait_for, write_script

cli_env = cli_support.cli_env  # the fixture, by the name the tests ask for


def vault_registry() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(approval=True)
    def open_vault(name: str) -> str:
        """Open a vault."""
        return "open"

    return registry


async def test_pending_and_show_say_a_run_is_encrypted_and_go_on(
    client: Client, task_queue: str, tmp_path: Path, cli_env: str, capsys: Any
) -> None:
    secure = await encrypting_client(client)
    steps = [calls(("v1", "open_vault", {"name": ARGUMENT})), answer("done")]
    async with running_worker(secure, vault_registry(), task_queue):
        encrypted = await DurableTools(secure, task_queue).start(
            "open it", model=write_script(tmp_path, steps)
        )
        await wait_for(encrypted, lambda s: bool(s.pending_approvals))
        # The CLI runs without the keys (the environment has none).
        code, listed, err = await cli(capsys, "pending")
        assert code == 0, err
        assert encrypted.run_id in listed and "encrypted" in listed
        assert "DURABLE_TOOLS_CODEC_KEYS" in listed
        assert ARGUMENT not in listed and "Traceback" not in err
        entries = await cli_json(capsys, "pending")
        assert any(e["run_id"] == encrypted.run_id and e.get("encrypted") for e in entries)
        code, shown, err = await cli(capsys, "show", encrypted.run_id)
        assert code == 0, err
        assert "encrypted" in shown and "AgentStatus: awaiting_approval" in shown
        assert ARGUMENT not in shown
        # With the keys, the same run reads in full.
        await encrypted.approve(
            "v1", arguments_hash=(await encrypted.status()).pending_approvals[0].arguments_hash
        )
        await encrypted.result()
