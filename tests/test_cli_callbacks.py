"""`durable-tools callbacks serve` answers a run's callback calls, against the dev server."""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

import cli_support
from cli_support import cli
from durable_tools import DurableTools, RunStatus, ToolRegistry
from durable_tools.callbacks import pending_callbacks
from durable_tools.workflows import AgentWorkflow
from support import answer, assert_not_wedged, calls, running_worker, write_script

cli_env = cli_support.cli_env  # the fixture, by the name the tests ask for

HANDLERS = """
def read_clipboard(max_chars):
    return {"text": "copied on the client"[:max_chars]}
"""


def clipboard_registry() -> ToolRegistry:
    registry = ToolRegistry()
    registry.callback_tool(
        "read_clipboard",
        description="The text on the user's clipboard.",
        parameters={
            "type": "object",
            "properties": {"max_chars": {"type": "integer"}},
            "required": ["max_chars"],
        },
        output={
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    )
    return registry


async def test_callbacks_serve_answers_a_run(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    cli_env: str,
    capsys: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = f"clip_handlers_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text(HANDLERS)
    monkeypatch.syspath_prepend(str(tmp_path))
    model = write_script(
        tmp_path, [calls(("k1", "read_clipboard", {"max_chars": 6})), answer("read it")]
    )
    async with running_worker(client, clipboard_registry(), task_queue):
        run = await DurableTools(client, task_queue).start("what is copied?", model=model)
        for _ in range(150):
            if await pending_callbacks(run.handle):
                break
            await asyncio.sleep(0.1)
        code, out, err = await cli(capsys, "show", run.run_id)
        assert code == 0, err
        assert "waiting for a client" in out  # the call's line in the timeline
        code, out, err = await cli(
            capsys, "callbacks", "serve", "--tools", module, run.run_id, "--poll-interval", "0.1"
        )
        assert code == 0, err
        assert "call k1 (read_clipboard): answered" in out
        assert "1 calls answered here" in out
        assert (await run.result()).status == RunStatus.COMPLETED
        conversation = await run.handle.query(AgentWorkflow.conversation)
        tool = next(m for m in conversation if m.role == "tool")
        assert json.loads(tool.content) == {"text": "copied"}
        await assert_not_wedged(run.handle)
    sys.modules.pop(module, None)


async def test_callbacks_serve_explains_a_module_without_handlers(
    tmp_path: Path, cli_env: str, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = f"empty_handlers_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    code, _, err = await cli(capsys, "callbacks", "serve", "--tools", module, "some-run")
    assert code == 2
    assert "holds no callback handlers" in err
    sys.modules.pop(module, None)
